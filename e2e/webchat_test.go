package e2e

// The web chat (/chat/, built on the JavaScript SDK at /sdk/imd.js) in real headless
// Chromium: two browser users chat with each other and with a TCP client, one goes away and
// comes back to what it missed. Screenshots go to $IMD_ARTIFACTS_DIR (default
// .run/artifacts, ignored by git).

import (
	"context"
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

func openChat(t *testing.T, srv *Server, name, token string, device int) *chatUser {
	t.Helper()
	u := &chatUser{browser: newBrowser(t), name: name, url: "http://" + srv.HTTPAddr + "/chat/"}
	u.do(chromedp.Navigate(u.url))
	u.waitFor("the sign-in form", "!!document.querySelector('#login:not([hidden])')", 30*time.Second)
	u.submit("login", map[string]string{"token": token, "device": strconv.Itoa(device)})
	u.waitText("#status", "connected", 30*time.Second)
	u.shot(name + "-signed-in")
	return u
}

// conversation opens topic from the conversation list.
func (u *chatUser) conversation(topic string) {
	u.t.Helper()
	sel := "#dialogs li[data-topic=" + jsString(topic) + "]"
	u.waitFor(topic+" in the conversation list", "!!document.querySelector("+jsString(sel)+")", 30*time.Second)
	u.click(sel)
	u.waitText("#topic", topic, 10*time.Second)
}

func (u *chatUser) say(text string) {
	u.t.Helper()
	u.submit("compose", map[string]string{"text": text})
	u.waitText("#messages li.mine:last-child", text, 30*time.Second)
}

func (u *chatUser) sees(text string) {
	u.t.Helper()
	u.waitText("#messages", text, 30*time.Second)
}

func TestWebChatInABrowser(t *testing.T) {
	srv := Start(t, Options{})
	const alice, bob, carol = 3001, 3002, 3003
	aliceToken, bobToken, carolToken := srv.User(alice), srv.User(bob), srv.User(carol)
	topic := srv.Group(77, alice, alice, bob, carol)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Carol is on a phone: TCP, through the Go client.
	phone := srv.Connect(ctx, carolToken, 1)
	first, err := phone.Send(ctx, textMessage(topic, "carol-1", "hello from the phone"))
	if err != nil {
		t.Fatal(err)
	}

	a := openChat(t, srv, "alice", aliceToken, 11)
	b := openChat(t, srv, "bob", bobToken, 12)
	// Issue 33: the token lives with the tab (sessionStorage), never on disk for the next
	// user of the browser (localStorage).
	if stored := eval[bool](a.browser, "localStorage.getItem('imd.chat.token') === null && sessionStorage.getItem('imd.chat.token') === "+jsString(aliceToken)); !stored {
		t.Fatal("the web chat keeps its token in localStorage, or not for the tab")
	}
	a.conversation(topic)
	b.conversation(topic)
	a.sees("hello from the phone")
	b.sees("hello from the phone")
	a.waitText("#readmark", "read up to #"+strconv.FormatInt(first.Seq, 10), 30*time.Second)

	a.say("hi bob, alice here")
	b.sees("hi bob, alice here")
	b.say("hi alice")
	a.sees("hi alice")
	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case p := <-phone.Pushes():
			if p.Message != nil {
				got[string(p.Message.Content)] = true
			}
		case <-ctx.Done():
			t.Fatalf("the phone got %v of the browsers' messages", got)
		}
	}
	if _, err := phone.Send(ctx, textMessage(topic, "carol-2", "the phone answers")); err != nil {
		t.Fatal(err)
	}
	a.sees("the phone answers")
	b.sees("the phone answers")
	a.shot("alice-chatting")
	b.shot("bob-chatting")

	// Bob leaves the page; what is said meanwhile waits for him.
	b.do(chromedp.Navigate("about:blank"))
	a.say("bob, are you there?")
	if _, err := phone.Send(ctx, textMessage(topic, "carol-3", "he went away")); err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.Navigate(b.url))
	b.waitText("#status", "connected", 30*time.Second)
	unread := "#dialogs li[data-topic=" + jsString(topic) + "] .unread"
	b.waitFor("the missed messages counted unread", "Number((document.querySelector("+jsString(unread)+")||{}).textContent||0) >= 2", 30*time.Second)
	b.shot("bob-back-with-unread")
	b.conversation(topic)
	b.sees("bob, are you there?")
	b.sees("he went away")
	b.waitText("#readmark", "read up to", 30*time.Second)
	b.shot("bob-caught-up")
	if n := eval[float64](b.browser, "document.querySelectorAll('#messages li').length"); n != 6 {
		t.Fatalf("bob's conversation shows %v messages, want the 6 sent (each once)", n)
	}

	// A server restart: both pages are kicked ("shutdown"), reconnect by themselves and go on.
	srv.Stop()
	a.waitFor("alice to notice the restart", "document.querySelector('#status').dataset.state !== 'open'", 30*time.Second)
	srv.Restart()
	a.waitText("#status", "connected", 60*time.Second)
	b.waitText("#status", "connected", 60*time.Second)
	a.say("still here after the restart")
	b.sees("still here after the restart")
	b.shot("bob-after-restart")
	if n := eval[float64](b.browser, "document.querySelectorAll('#messages li').length"); n != 7 {
		t.Fatalf("after the restart bob's conversation shows %v messages, want 7 (none lost, none twice)", n)
	}
}
