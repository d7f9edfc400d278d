package e2e

// The web chat (/chat/, built on the JavaScript SDK at /sdk/imd.js) in real headless
// Chromium: two people sign in by user id (the development sign-in) and chat with each other
// and with a TCP client; one goes away and comes back to what it missed, and both ride out a
// server restart. A screenshot of each feature goes to $IMD_ARTIFACTS_DIR (default
// .run/artifacts, ignored by git).

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chatUser is one browser signed in to the web chat.
type chatUser struct {
	*browser
	name string
	url  string
}

// openChat signs in by user id through the page's form, with a name when one is given.
func openChat(t *testing.T, srv *Server, name string, userID int64, nickname string, device int) *chatUser {
	t.Helper()
	u := &chatUser{browser: newBrowser(t), name: name, url: "http://" + srv.HTTPAddr + "/chat/"}
	u.do(chromedp.Navigate(u.url))
	u.waitFor("the sign-in form", "!!document.querySelector('#login:not([hidden])')", 30*time.Second)
	// The tenant and device sit folded away under "Tenant and device": set, not typed.
	eval[bool](u.browser, "document.querySelector('#tenant').value = "+jsString(srv.Tenant)+", document.querySelector('#device').value = "+jsString(strconv.Itoa(device))+", true")
	fields := map[string]string{"user-id": strconv.FormatInt(userID, 10)}
	if nickname != "" {
		fields["nickname"] = nickname
	}
	u.submit("signin", fields)
	u.waitText("#status", "connected", 30*time.Second)
	u.shot(name + "-signed-in")
	return u
}

// devSignIn mints a token for id through the development sign-in, creating the user with
// nickname.
func devSignIn(t *testing.T, srv *Server, id int64, nickname string) string {
	t.Helper()
	var got struct{ Token string }
	mustCall(t, srv, "", "POST", "/dev/v1/tenants/"+srv.Tenant+"/signin", map[string]any{"user_id": id, "nickname": nickname}, &got)
	return got.Token
}

// dialog is the selector of topic's entry in the conversation list, or of part within it.
func dialog(topic, part string) string {
	return ("#dialogs li[data-topic=" + jsString(topic) + "] " + part)
}

// conversation opens topic from the conversation list and waits for its title.
func (u *chatUser) conversation(topic, title string) {
	u.t.Helper()
	sel := dialog(topic, "")
	u.waitFor(topic+" in the conversation list", "!!document.querySelector("+jsString(sel)+")", 30*time.Second)
	// Clicked from inside the page: renderDialogs (clients/webchat/app.js) redraws the list
	// after each read mark, which can drop the node a DevTools click found a moment before.
	eval[bool](u.browser, "document.querySelector("+jsString(sel)+").click(), true")
	u.waitText("#topic", title, 10*time.Second)
}

func (u *chatUser) say(text string) {
	u.t.Helper()
	u.submit("compose", map[string]string{"text": text})
	u.waitText("#messages > li.mine:last-child", text, 30*time.Second)
}

func (u *chatUser) sees(text string) {
	u.t.Helper()
	u.waitText("#messages", text, 30*time.Second)
}

// messageWith is the selector of the newest message whose text contains text, as a JS expression.
func messageWith(text string) string {
	return "[...document.querySelectorAll('#messages > li')].reverse().find((li) => li.textContent.includes(" + jsString(text) + "))"
}

// act clicks an action (reply, edit, recall, react, pin, unpin, forward) of the newest message containing text.
func (u *chatUser) act(action, text string) {
	u.t.Helper()
	u.waitFor("the message "+strconv.Quote(text), "!!"+messageWith(text), 30*time.Second)
	eval[bool](u.browser, "("+messageWith(text)+").querySelector('.action."+action+"').click(), true")
	if action == "reply" || action == "edit" { // drafted first
		u.waitFor("the draft bar", "!document.querySelector('#draft').hidden", 10*time.Second)
	}
}

// react puts emoji on the newest message containing text through its React palette.
func (u *chatUser) react(text, emoji string) {
	u.t.Helper()
	u.act("react", text)
	eval[bool](u.browser, "("+messageWith(text)+").querySelector('.palette button[data-emoji="+jsString(emoji)+"]').click(), true")
}

// reaction is the JS expression of the chip of emoji under the newest message containing
// text ("" when there is none).
func reaction(text, emoji string) string {
	return "((" + messageWith(text) + ")?.querySelector('.reaction[data-emoji=" + jsString(emoji) + "]')?.textContent ?? '')"
}

// dot is the JS expression of the presence state of user's dot in the selected element.
func dot(css string, user int64) string {
	return "document.querySelector(" + jsString(css+" .dot[data-user=\""+strconv.FormatInt(user, 10)+"\"]") + ")?.dataset.state"
}

// receipt is the JS expression of the read receipt mark under the newest message containing text.
func receipt(text string) string {
	return "(" + messageWith(text) + ")?.querySelector('.receipt')"
}

// testImage writes a 320×200 PNG for the upload.
func testImage(t *testing.T) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 320, 200))
	for x := range 320 {
		for y := range 200 {
			img.Set(x, y, color.RGBA{R: uint8(x * 255 / 320), G: uint8(y * 255 / 200), B: 160, A: 255})
		}
	}
	path := filepath.Join(t.TempDir(), "sunset.png")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
	return path
}

// setAvatar uploads the picture at path through the client API and makes it the user's avatar.
func setAvatar(t *testing.T, srv *Server, token, path string) {
	t.Helper()
	picture, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var up struct {
		Key, URL string
		Headers  map[string]string
	}
	mustCall(t, srv, token, "POST", "/api/v1/uploads", map[string]any{"content_type": "image/png", "size": len(picture)}, &up)
	req, err := http.NewRequest("PUT", up.URL, bytes.NewReader(picture))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range up.Headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("PUT %s: HTTP %d", up.URL, res.StatusCode)
	}
	mustCall(t, srv, token, "PUT", "/api/v1/me", map[string]any{"avatar": up.Key}, nil)
}

// TestWebChatDevSignInIsOffByDefault: a server whose config does not switch the development
// sign-in on — the default, as in production — has no such route (issue 31).
func TestWebChatDevSignInIsOffByDefault(t *testing.T) {
	srv := Start(t, Options{})
	srv.User(3101)
	refused(t, srv, "", "POST", "/dev/v1/tenants/"+srv.Tenant+"/signin", map[string]any{"user_id": 3101}, 40401)
}

func TestWebChatInABrowser(t *testing.T) {
	srv := Start(t, Options{Env: map[string]string{"IMD_HTTP_DEV_SIGNIN": "true"}})
	const alice, bob, carol = 3001, 3002, 3003
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	aliceToken, bobToken, carolToken := devSignIn(t, srv, alice, "Alice Liddell"), devSignIn(t, srv, bob, "Bob Builder"), devSignIn(t, srv, carol, "Carol Phone")
	srv.MustAdmin("POST", "/friendships", map[string]any{"user_a": alice, "user_b": bob}, nil)
	var g struct{ Topic string }
	mustCall(t, srv, aliceToken, "POST", "/api/v1/groups", map[string]any{"group_id": 77, "name": "Weekend trip", "members": []int64{bob, carol}}, &g)
	topic := g.Topic

	picture := testImage(t)
	setAvatar(t, srv, carolToken, picture)

	// Carol is on a phone: TCP, through the Go client. Her older messages fill more than the
	// page the chat loads first, and the month switches under them: scrolling back crosses
	// from next month's table into this one's.
	phone := srv.Connect(ctx, carolToken, 1)
	for i := 1; i <= 40; i++ {
		if i == 21 {
			now := time.Now().UTC()
			srv.Advance(time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC).Format("200601"))
		}
		if _, err := phone.Send(ctx, textMessage(topic, fmt.Sprintf("old-%d", i), fmt.Sprintf("old news %02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := phone.Send(ctx, textMessage(topic, "carol-1", "hello from the phone")); err != nil {
		t.Fatal(err)
	}
	// Bob's phone writes to Alice alone, after: that conversation is the newest.
	bobPhone := srv.Connect(ctx, bobToken, 2)
	if _, err := sendTo(ctx, bobPhone, alice, "bob-p2p-1", "psst, just us"); err != nil {
		t.Fatal(err)
	}
	bobPhone.Close() // Bob's presence is his browser's from here on
	p2p := fmt.Sprintf("p2p_%d_%d", alice, bob)

	// Alice signs in with her id alone; Bob gives his name again (a rename to the same).
	a := openChat(t, srv, "alice", alice, "", 11)
	a.waitFor("bob's dot offline before he signs in", dot(dialog(p2p, ""), bob)+" === 'offline'", 30*time.Second)
	b := openChat(t, srv, "bob", bob, "Bob Builder", 12)
	// Presence (issue 31): Alice's list turns Bob's dot green when his browser connects.
	a.waitFor("bob's dot online", dot(dialog(p2p, ""), bob)+" === 'online'", 30*time.Second)
	a.shot("alice-sees-bob-online")
	// Issue 33: the token lives with the tab (sessionStorage), never on disk for the next
	// user of the browser (localStorage).
	if stored := eval[bool](a.browser, "localStorage.getItem('imd.chat.token') === null && !!sessionStorage.getItem('imd.chat.token')"); !stored {
		t.Fatal("the web chat keeps its token in localStorage, or not for the tab")
	}
	a.waitText("#me", "Alice Liddell", 30*time.Second)

	// The conversation list: titles (the group's name, the peer's name), previews, times,
	// unread badges, newest first.
	a.waitText(dialog(topic, ".title"), "Weekend trip", 30*time.Second)
	a.waitText(dialog(p2p, ".title"), "Bob Builder", 30*time.Second)
	a.waitText(dialog(topic, ".preview"), "hello from the phone", 10*time.Second)
	a.waitText(dialog(p2p, ".preview"), "psst, just us", 10*time.Second)
	a.waitFor("the group's unread badge", "Number(document.querySelector("+jsString(dialog(topic, ".unread"))+").textContent) >= 41", 10*time.Second)
	a.waitFor("times in the list", "[...document.querySelectorAll('#dialogs .time')].every((e) => e.textContent.length >= 4)", 10*time.Second)
	if first := eval[string](a.browser, "document.querySelector('#dialogs li').dataset.topic"); first != p2p {
		t.Errorf("the list starts with %s, want the newest conversation %s", first, p2p)
	}
	a.shot("alice-conversation-list")

	// Names and times on messages, never ids.
	a.conversation(topic, "Weekend trip")
	a.sees("hello from the phone")
	a.waitText("#messages > li:last-child .from", "Carol Phone", 10*time.Second)
	a.waitFor("Carol's avatar", "document.querySelector('#messages > li:last-child .avatar img')?.naturalWidth === 320", 10*time.Second)
	a.waitFor("a message time", "/\\d/.test(document.querySelector('#messages > li:last-child time').textContent)", 10*time.Second)
	a.waitFor("the badge cleared", "document.querySelector("+jsString(dialog(topic, ".unread"))+").textContent === ''", 10*time.Second)
	if ids := eval[bool](a.browser, "/User 300\\d|user 300\\d/.test(document.querySelector('main').textContent)"); ids {
		t.Error("the chat shows user ids where names belong")
	}
	a.shot("alice-names-and-times")

	// Scrolling to the top loads the page before: the oldest messages appear.
	a.waitFor("the first page without the oldest", "!document.querySelector('#messages').textContent.includes('old news 01')", 10*time.Second)
	eval[bool](a.browser, "document.querySelector('#messages').scrollTop = 0, document.querySelector('#messages').dispatchEvent(new Event('scroll')), true")
	a.sees("old news 01")
	if n := eval[float64](a.browser, "document.querySelectorAll('#messages > li:not(.system)').length"); n != 41 {
		t.Errorf("after scrolling back alice sees %v messages, want 41", n)
	}
	a.shot("alice-older-history")

	// Bob and Alice chat; a reply quotes what it answers.
	b.conversation(topic, "Weekend trip")
	b.say("hi all, bob here")
	a.sees("hi all, bob here")
	a.waitText("#messages > li:last-child .from", "Bob Builder", 10*time.Second)
	a.waitFor("bob's dot on his message", dot("#messages > li:last-child", bob)+" === 'online'", 10*time.Second)
	a.act("reply", "hi all, bob here")
	a.shot("alice-replying")
	a.say("welcome, bob")
	b.sees("welcome, bob")
	b.waitText("#messages > li:last-child .quote", "hi all, bob here", 30*time.Second)
	b.waitText("#messages > li:last-child .quote-from", "You", 10*time.Second)
	a.waitText("#messages > li:last-child .quote-from", "Bob Builder", 10*time.Second)
	b.shot("bob-sees-a-reply-quote")

	// Edit: Bob's copy follows, marked edited.
	a.say("lets meet at noun")
	b.sees("lets meet at noun")
	a.act("edit", "lets meet at noun")
	a.submit("compose", map[string]string{"text": "let's meet at noon"})
	b.waitText("#messages", "let's meet at noon", 30*time.Second)
	b.waitFor("the edited mark", "!!("+messageWith("let's meet at noon")+").querySelector('.edited')", 10*time.Second)
	b.shot("bob-sees-an-edit")

	// Recall: Bob's copy says it was recalled, and the text is gone.
	a.say("wrong chat, sorry")
	b.sees("wrong chat, sorry")
	a.act("recall", "wrong chat, sorry")
	b.waitText("#messages", "This message was recalled", 30*time.Second)
	if eval[bool](b.browser, "document.querySelector('#messages').textContent.includes('wrong chat, sorry')") {
		t.Error("bob still sees the recalled text")
	}
	a.waitText("#messages", "You recalled this message", 10*time.Second)
	b.shot("bob-sees-a-recall")

	// An image: previewed before it is sent, shown on both sides once sent.
	a.do(chromedp.SetUploadFiles(chromedp.CSS("#image"), []string{picture}))
	a.waitFor("the image preview", "document.querySelector('#draft-image').naturalWidth === 320", 10*time.Second)
	a.shot("alice-image-preview")
	a.do(chromedp.Click(chromedp.CSS("#compose-submit")))
	for _, u := range []*chatUser{a, b} {
		u.waitFor(u.name+" to see the image", "[...document.querySelectorAll('#messages img.image')].some((i) => i.complete && i.naturalWidth === 320)", 30*time.Second)
	}
	b.shot("bob-sees-an-image")
	// The web chat confirmed the upload, so the list shows the server's thumbnail, not the original.
	if !eval[bool](b.browser, "[...document.querySelectorAll('#messages img.image')].some((i) => new URL(i.src).pathname.endsWith('.thumb.jpg'))") {
		t.Error("bob's image is not drawn from its thumbnail")
	}
	if preview := b.text(dialog(topic, ".preview")); preview != "Photo" {
		t.Errorf("bob's list previews the image as %q", preview)
	}

	// Bob leaves the page; what is said meanwhile waits for him, counted unread.
	b.do(chromedp.Navigate("about:blank"))
	a.waitFor("bob's dot offline once he left", dot(dialog(p2p, ""), bob)+" === 'offline'", 15*time.Second)
	a.shot("alice-sees-bob-gone")
	a.say("bob, are you there?")
	if _, err := phone.Send(ctx, textMessage(topic, "carol-2", "he went away")); err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.Navigate(b.url))
	b.waitText("#status", "connected", 30*time.Second)
	b.waitFor("the missed messages counted unread", "Number((document.querySelector("+jsString(dialog(topic, ".unread"))+")||{}).textContent||0) >= 2", 30*time.Second)
	b.waitText(dialog(topic, ".preview"), "he went away", 10*time.Second)
	b.shot("bob-back-with-unread")
	b.conversation(topic, "Weekend trip")
	b.sees("bob, are you there?")
	b.sees("he went away")

	// A server restart: both pages show the reconnect banner, reconnect by themselves and go on.
	srv.Stop()
	a.waitFor("alice's reconnect banner", "!document.querySelector('#banner').hidden && document.querySelector('#banner').textContent.includes('reconnecting')", 30*time.Second)
	a.shot("alice-reconnect-banner")
	srv.Restart()
	for _, u := range []*chatUser{a, b} {
		u.waitText("#status", "connected", 60*time.Second)
		u.waitFor(u.name+"'s banner gone", "document.querySelector('#banner').hidden", 10*time.Second)
	}
	a.say("still here after the restart")
	b.sees("still here after the restart")
	b.shot("bob-after-restart")
	if dup := eval[bool](b.browser, "(() => { const s = [...document.querySelectorAll('#messages > li')].map((li) => li.dataset.seq); return new Set(s).size !== s.length })()"); dup {
		t.Error("bob's conversation shows a message twice")
	}

	// Typing (issue 31): Alice sees Bob typing; it goes when he clears the field, and when he
	// sends.
	b.do(chromedp.SendKeys(chromedp.CSS("#text"), "scratch that"))
	a.waitText("#typing", "Bob Builder is typing…", 15*time.Second)
	a.shot("alice-sees-bob-typing")
	eval[bool](b.browser, "document.querySelector('#text').value = '', document.querySelector('#text').dispatchEvent(new Event('input')), true")
	a.waitFor("the typing line gone after a clear", "document.querySelector('#typing').textContent === ''", 15*time.Second)
	b.do(chromedp.SendKeys(chromedp.CSS("#text"), "on my way"))
	a.waitText("#typing", "Bob Builder is typing…", 15*time.Second)
	b.click("#compose-submit")
	a.sees("on my way")
	a.waitFor("the typing line gone after a send", "document.querySelector('#typing').textContent === ''", 15*time.Second)

	// Reactions (issue 31): each sees the other's, counted, and a click takes one's own back.
	a.react("on my way", "👍")
	b.waitFor("alice's 👍 at bob's", reaction("on my way", "👍")+" === '👍 1'", 15*time.Second)
	b.react("on my way", "👍")
	a.waitFor("two 👍 at alice's", reaction("on my way", "👍")+" === '👍 2'", 15*time.Second)
	a.shot("alice-sees-two-reactions")
	a.do(chromedp.Click(chromedp.CSS("#messages .reaction.mine")))
	b.waitFor("one 👍 left at bob's", reaction("on my way", "👍")+" === '👍 1'", 15*time.Second)
	b.do(chromedp.Click(chromedp.CSS("#messages .reaction.mine")))
	a.waitFor("no 👍 left at alice's", reaction("on my way", "👍")+" === ''", 15*time.Second)

	// Pins (issue 31): Alice owns the group and pins; both pinned bars show it until she unpins.
	a.act("pin", "let's meet at noon")
	for _, u := range []*chatUser{a, b} {
		u.waitText("#pins", "let's meet at noon", 15*time.Second)
	}
	b.shot("bob-sees-a-pin")
	a.click("#pins .action.unpin")
	for _, u := range []*chatUser{a, b} {
		u.waitFor(u.name+"'s pinned bar gone", "document.querySelector('#pins').hidden", 15*time.Second)
	}

	// Forward (issue 31): Alice sends a copy of Bob's message to their own conversation.
	a.act("forward", "on my way")
	a.waitFor("the forward picker", "!document.querySelector('#forward').hidden", 10*time.Second)
	a.waitText("#forward-list", "Bob Builder", 10*time.Second)
	a.shot("alice-forward-picker")
	a.click("#forward-list li[data-topic=" + jsString(p2p) + "]")
	a.waitText("#readmark", "Forwarded to Bob Builder", 15*time.Second)
	b.conversation(p2p, "Alice Liddell")
	b.sees("on my way")
	b.waitText("#messages > li:last-child .forwarded", "Forwarded from you", 15*time.Second)
	b.shot("bob-sees-a-forward")

	// Read receipts (issue 31): in P2P Alice's message turns ✓✓ once Bob's browser has it and
	// read once he opens the conversation; in the group it is read by 1 of the 2 others once
	// he opens the group; and while he hides his receipts, his reads show nowhere.
	b.conversation(topic, "Weekend trip")
	a.conversation(p2p, "Bob Builder")
	a.say("did you get this?")
	a.waitFor("✓✓ delivered", receipt("did you get this?")+"?.dataset.state === 'delivered'", 15*time.Second)
	if mark := a.text("#messages > li:last-child .receipt"); mark != "✓✓" {
		t.Errorf("alice's delivered message is marked %q", mark)
	}
	a.shot("alice-sees-delivered")
	b.conversation(p2p, "Alice Liddell")
	b.sees("did you get this?")
	a.waitFor("✓✓ read", receipt("did you get this?")+"?.textContent === '✓✓ read'", 15*time.Second)
	a.shot("alice-sees-read")

	a.conversation(topic, "Weekend trip")
	a.say("who is reading?")
	a.waitText("#messages > li:last-child .receipt", "read by 0 of 2", 15*time.Second)
	b.conversation(topic, "Weekend trip")
	b.sees("who is reading?")
	a.waitText("#messages > li:last-child .receipt", "read by 1 of 2", 15*time.Second)
	a.waitFor("bob named as a reader", receipt("who is reading?")+"?.title === 'Read by Bob Builder'", 10*time.Second)
	a.click("#messages > li:last-child .receipt")
	a.waitText("#readmark", "Read by Bob Builder", 10*time.Second)
	a.shot("alice-sees-read-by-1-of-2")

	// Bob's switch, once the server has it (SETTINGS; the checkbox is the page's only sign).
	bobHides := func(hide bool) {
		b.click("#hide-receipts")
		eventually(t, 15*time.Second, fmt.Sprintf("bob's hide_receipts %v saved", hide), func() bool {
			var got struct {
				HideReceipts bool `json:"hide_receipts"`
			}
			mustCall(t, srv, bobToken, "GET", "/api/v1/settings", nil, &got)
			return got.HideReceipts == hide
		})
	}
	bobHides(true)
	a.conversation(p2p, "Bob Builder")
	a.say("read this quietly")
	a.waitFor("✓✓ delivered while bob hides", receipt("read this quietly")+"?.dataset.state === 'delivered'", 15*time.Second)
	b.conversation(p2p, "Alice Liddell")
	b.sees("read this quietly")
	b.waitText("#readmark", "read up to", 10*time.Second)
	// No RECEIPT comes, and opening the conversation again asks READ_STATE, which counts him
	// out (docs/PROTOCOL.md, SETTINGS); his reads above reached Alice well within 3 s.
	a.conversation(topic, "Weekend trip")
	a.conversation(p2p, "Bob Builder")
	a.sees("read this quietly")
	time.Sleep(3 * time.Second)
	if state := eval[string](a.browser, receipt("read this quietly")+"?.dataset.state"); state != "delivered" {
		t.Errorf("alice's message read by bob while he hides his receipts is marked %q", state)
	}
	a.shot("alice-sees-no-read-from-hidden-bob")
	// RECEIPT pushes are live only: after a reload, READ_STATE tells Alice's page what Bob read.
	bobHides(false)
	a.do(chromedp.Reload())
	a.waitText("#status", "connected", 30*time.Second)
	a.conversation(p2p, "Bob Builder")
	a.waitFor("✓✓ read after a reload", receipt("read this quietly")+"?.dataset.state === 'read'", 15*time.Second)
	a.shot("alice-sees-read-after-reload")

	// Presence in the header, hidden on request (SETTINGS), and a last-seen when Bob leaves.
	b.waitText("#presence", "online", 15*time.Second)
	a.click("#hide-presence")
	b.waitFor("alice offline once hidden", "document.querySelector('#presence').textContent === 'offline'", 15*time.Second)
	b.shot("bob-sees-alice-hidden")
	a.click("#hide-presence")
	b.waitText("#presence", "online", 15*time.Second)
	a.conversation(p2p, "Bob Builder")
	a.waitFor("the forwarded copy", "("+messageWith("on my way")+")?.querySelector('.forwarded')?.textContent === 'Forwarded from Bob Builder'", 15*time.Second)
	a.waitText("#presence", "online", 15*time.Second)
	b.do(chromedp.Navigate("about:blank"))
	a.waitText("#presence", "last seen", 15*time.Second)
	if state := eval[string](a.browser, dot("#conversation-header", bob)); state != "offline" {
		t.Errorf("bob's dot in alice's header is %q once he left", state)
	}
	a.shot("alice-sees-bob-last-seen")
}

// TestWebChatAcrossThreeNodes: issue 31's "on one node or three". Three nodes of one tenant
// (as `go tool task run NODES=3` runs them), Alice's browser on the first and Bob's on the
// third: each sees the other come online, type, read (✓✓, "read by"), react and pin, every
// event crossing nodes (DESIGN §11, §13).
func TestWebChatAcrossThreeNodes(t *testing.T) {
	nodes := startNodes(t, 3, map[string]string{"IMD_HTTP_DEV_SIGNIN": "true"})
	const alice, bob, carol = 3201, 3202, 3203
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	aliceToken, bobToken := devSignIn(t, nodes[0], alice, "Alice Liddell"), devSignIn(t, nodes[2], bob, "Bob Builder")
	devSignIn(t, nodes[1], carol, "Carol Phone")
	nodes[1].MustAdmin("POST", "/friendships", map[string]any{"user_a": alice, "user_b": bob}, nil)
	var g struct{ Topic string }
	mustCall(t, nodes[1], aliceToken, "POST", "/api/v1/groups", map[string]any{"group_id": 78, "name": "Three nodes", "members": []int64{bob, carol}}, &g)
	// Bob's phone, on the second node, opens both conversations and leaves.
	phone := nodes[1].Connect(ctx, bobToken, 2)
	if _, err := phone.Send(ctx, textMessage(g.Topic, "bob-3n-0", "hello group")); err != nil {
		t.Fatal(err)
	}
	if _, err := sendTo(ctx, phone, alice, "bob-3n-1", "hello across nodes"); err != nil {
		t.Fatal(err)
	}
	phone.Close()
	p2p := fmt.Sprintf("p2p_%d_%d", alice, bob)

	a := openChat(t, nodes[0], "three-nodes-alice", alice, "", 11)
	a.waitFor("bob's dot offline", dot(dialog(p2p, ""), bob)+" === 'offline'", 30*time.Second)
	b := openChat(t, nodes[2], "three-nodes-bob", bob, "", 12)
	a.waitFor("bob's dot online", dot(dialog(p2p, ""), bob)+" === 'online'", 30*time.Second)
	b.waitFor("alice's dot online", dot(dialog(p2p, ""), alice)+" === 'online'", 30*time.Second)
	a.shot("three-nodes-alice-sees-bob-online")

	// Typing, then the message it ends with.
	a.conversation(p2p, "Bob Builder")
	b.conversation(p2p, "Alice Liddell")
	b.do(chromedp.SendKeys(chromedp.CSS("#text"), "typing on node 3"))
	a.waitText("#typing", "Bob Builder is typing…", 15*time.Second)
	a.shot("three-nodes-alice-sees-bob-typing")
	b.click("#compose-submit")
	a.sees("typing on node 3")
	a.waitFor("the typing line gone after a send", "document.querySelector('#typing').textContent === ''", 15*time.Second)

	// P2P receipts: ✓✓ while Bob looks elsewhere, read once he opens the conversation.
	b.conversation(g.Topic, "Three nodes")
	a.say("did node 3 get this?")
	a.waitFor("✓✓ delivered", receipt("did node 3 get this?")+"?.dataset.state === 'delivered'", 15*time.Second)
	b.conversation(p2p, "Alice Liddell")
	b.sees("did node 3 get this?")
	a.waitFor("✓✓ read", receipt("did node 3 get this?")+"?.textContent === '✓✓ read'", 15*time.Second)
	a.shot("three-nodes-alice-sees-read")

	// Group receipts: read by 1 of the 2 others once Bob opens the group.
	a.conversation(g.Topic, "Three nodes")
	a.say("who reads on node 3?")
	a.waitText("#messages > li:last-child .receipt", "read by 0 of 2", 15*time.Second)
	b.conversation(g.Topic, "Three nodes")
	b.sees("who reads on node 3?")
	a.waitText("#messages > li:last-child .receipt", "read by 1 of 2", 15*time.Second)
	a.shot("three-nodes-alice-sees-read-by")

	// A reaction and a pin, each one topic event that crosses the nodes.
	a.react("who reads on node 3?", "👍")
	b.waitFor("alice's 👍 at bob's", reaction("who reads on node 3?", "👍")+" === '👍 1'", 15*time.Second)
	b.shot("three-nodes-bob-sees-a-reaction")
	a.act("pin", "who reads on node 3?")
	b.waitText("#pins", "who reads on node 3?", 15*time.Second)
	b.shot("three-nodes-bob-sees-a-pin")

	// Delivered while away (issue 31): Alice's page goes and her phone writes to Bob, whose page
	// (on the group) gets it; back, her page shows ✓✓ from READ_STATE, no RECEIPT having reached it.
	a.do(chromedp.Navigate("about:blank"))
	alicePhone := nodes[1].Connect(ctx, aliceToken, 3)
	if _, err := sendTo(ctx, alicePhone, bob, "alice-3n-away", "sent from my phone"); err != nil {
		t.Fatal(err)
	}
	b.waitText(dialog(p2p, ".preview"), "sent from my phone", 15*time.Second)
	alicePhone.Close()
	a.do(chromedp.Navigate(a.url))
	a.waitText("#status", "connected", 30*time.Second)
	a.conversation(p2p, "Bob Builder")
	a.waitFor("✓✓ for what was delivered while away", receipt("sent from my phone")+"?.dataset.state === 'delivered'", 15*time.Second)
	a.shot("three-nodes-alice-sees-delivered-while-away")

	// Bob leaves: Alice, on another node, sees him go.
	b.do(chromedp.Navigate("about:blank"))
	a.waitFor("bob's dot offline once he left", dot(dialog(p2p, ""), bob)+" === 'offline'", 15*time.Second)
	a.shot("three-nodes-alice-sees-bob-gone")
}
