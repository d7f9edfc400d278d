// This file describes who a push reached and what goes to the system push service for
// those it did not (seed 003 §12.2 step 5).

package delivery

import (
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/message"
)

// Device is one device of one user.
type Device struct {
	User   int64
	Device uint64
}

// Outcome is a delivery.Report that also names who was not reached.
type Outcome struct {
	Report
	// FailedDevices are connected devices whose outbound queue refused the frame.
	FailedDevices []Device
	// OfflineUsers are recipients with no connected device.
	OfflineUsers []int64
}

// Unreached is who a MESSAGE push did not reach and what decides what is done for them
// instead (deliver.Fallback): a MISSED_MESSAGE row per failed device unless NotMailbox, a
// system push to the failed and offline users unless NotPush, never to From or the Muted.
type Unreached struct {
	Message    *message.Message
	From       int64
	NotMailbox bool
	NotPush    bool
	Muted      map[int64]bool
	Failed     []Device
	Offline    []int64
	// Recipients are everyone the push was for; those neither Offline nor Failed took it
	// live and get the system push only if no device of theirs acknowledges it in time
	// (deliver.AckWait). Nil: none is waited for (a node pushing for another).
	Recipients []int64
}

// Notification asks the system push service (APNs, FCM, …) to tell users about a message
// they did not get over their connection.
type Notification struct {
	Users   []int64
	Preview dialog.Preview
}
