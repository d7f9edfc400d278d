package wire

// Native push tokens (issue 32; PROTOCOL.md §3 PUSH_TOKEN_SET, PUSH_TOKEN_DELETE).
const (
	CmdPushTokenSet    uint16 = 33 // client: register this device's APNs or FCM token
	CmdPushTokenDelete uint16 = 34 // client: remove it
)

// Push platforms of PushToken.
const (
	PlatformAPNs = "apns"
	PlatformFCM  = "fcm"
)

// PushToken is the body of PUSH_TOKEN_SET (and PUT /api/v1/push-tokens) and its answer:
// the token the platform gave the app on this device. DeviceID is the client's own name for
// the device (up to 64 bytes); AppID the APNs bundle id or the FCM project.
type PushToken struct {
	DeviceID string `json:"device_id"`
	Platform string `json:"platform"`
	AppID    string `json:"app_id"`
	Token    string `json:"token"`
	Locale   string `json:"locale,omitempty"`
}

// PushTokenDeleteRequest is the body of PUSH_TOKEN_DELETE.
type PushTokenDeleteRequest struct {
	DeviceID string `json:"device_id"`
}
