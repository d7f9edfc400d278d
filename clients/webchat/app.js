// The web chat: a client of what imd offers any app (issue 31, DESIGN §12) — the frame
// protocol through the JavaScript SDK (/sdk/imd.js) for conversations, messages, read marks,
// edits and recalls, and the client API (/api/v1) for profiles, group names, uploads and
// downloads. The SDK's cursors live in localStorage, so a reload catches up with what it missed.
//
// The token is kept in sessionStorage, never localStorage (issue 33, DESIGN §12): it lives as
// long as the tab, so a reload or a return to the page in the same tab signs in again, while
// closing the tab forgets it — nothing on the disk for the next user of the browser, nothing
// shared with other tabs. Memory alone would forget it at every reload; a cookie would ride
// along with every request to the origin. Any script of the origin can read either store, so
// the page's Content-Security-Policy runs only its own files, and nothing here turns text into
// markup: every piece of a message goes in through textContent.
//
// Later features hang off two places (issue 31): messageFooter (the line under each message:
// time, edited mark, actions) and conversationHeader (the bar above the open conversation).
// Presence, typing, read receipts, reactions, pins and forwarding (issue 31 part 6,
// docs/DESIGN.md) use the SDK's commands for them (docs/PROTOCOL.md, QUERY_PRESENCE to READ_STATE).
import { Client, Code, PresenceRefresher } from "/sdk/imd.js";

const $ = (id) => document.getElementById(id);
const saved = { token: "imd.chat.token", device: "imd.chat.device", tenant: "imd.chat.tenant" };
// PAGE is one GET_HISTORY page: the newest on opening, then one more per scroll to the top.
const PAGE = 30;
// TYPING_EVERY is how often a typist repeats TYPING: a notice lasts its expires_in (6 s), so
// "every few seconds" (docs/PROTOCOL.md, TYPING) keeps it shown, within 10 per 10 s.
const TYPING_EVERY = 3000;
const EMOJIS = ["👍", "❤️", "😂", "😮", "😢", "🎉"];
// LIVE_EVENTS change a shown message or the pins, never the list; a history page holds them
// newest first, so their counts would go back in time: only live ones (in seq order) apply.
const LIVE_EVENTS = ["reaction", "pin", "unpin"];
// READ_STATE_LATEST is how many of one's newest messages READ_STATE is asked about, and
// READ_STATE_EVERY how often while a group is open: groups get no RECEIPT pushes
// (docs/PROTOCOL.md, RECEIPT), so "read by K of N" is polled, its cost bounded by both.
const READ_STATE_LATEST = 3;
const READ_STATE_EVERY = 5000;
// SWITCHES are the settings checkboxes, each a SETTINGS field (docs/PROTOCOL.md, SETTINGS).
const SWITCHES = { "hide-presence": "hide_presence", "hide-receipts": "hide_receipts" };

const app = {
  client: null,
  token: "",
  me: 0,
  current: "",
  dialogs: new Map(), // topic → {topic, score, last_seq, read_seq, unread, preview}
  messages: new Map(), // seq → message, of the current topic
  oldest: 0, // the smallest seq loaded of the current topic
  olderDone: false, // history has nothing before oldest
  loadingOlder: null,
  // stick: the list was scrolled to its end, so what arrives or grows there stays in view.
  stick: true,
  draft: null, // {kind: "reply"|"edit", message} or {kind: "image", file, width, height}
  connectedOnce: false,
  presence: new Map(), // user id → {state, last_seen}
  presenceWatch: null, // the SDK's PresenceRefresher: asks again after users answered "unknown"
  typing: { topic: "", at: 0 }, // this user's last TYPING true
  typists: new Map(), // topic → Map(user id → expiry timer)
  typingDrawn: 0, // the latest renderTyping, so a slower earlier one gives way
  pins: new Set(), // seqs pinned in the current topic
  receipts: new Map(), // P2P topic → {delivered, read}: the peer's highest seqs
  readBy: new Map(), // seq → READ_STATE answer, of the current topic
  readStateAsked: "", // the topic of the READ_STATE round in flight
};

// --- the client API ---

async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: { Authorization: `Bearer ${app.token}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw Object.assign(new Error(data.msg || `${method} ${path}: HTTP ${res.status}`), { code: data.code, status: res.status });
  return data;
}

// cached keeps one answer per key, so a name or link is asked for once per page.
function cached(fetcher) {
  const memo = new Map();
  return (key) => {
    if (!memo.has(key)) memo.set(key, fetcher(key).catch((e) => { memo.delete(key); throw e; }));
    return memo.get(key);
  };
}

const profile = cached((id) => api("GET", `/api/v1/users/${id}`).catch(() => ({ user_id: id })));
const group = cached((id) => api("GET", `/api/v1/groups/${id}`).catch(() => ({ group_id: id })));
const download = cached((key) => api("POST", "/api/v1/downloads", { key }).then((d) => d.url));

function nameOf(p) { return p.nickname || `User ${p.user_id}`; }

// conversation is what a topic is called and shown as: the group's name, or the peer's.
async function conversation(topic) {
  const g = /^grp_(\d+)$/.exec(topic);
  if (g) {
    const info = await group(Number(g[1]));
    return { title: info.name || `Group ${g[1]}`, avatar: "" };
  }
  const peer = peerOf(topic);
  if (peer) {
    const info = await profile(peer);
    return { title: nameOf(info), avatar: info.avatar || "" };
  }
  return { title: topic, avatar: "" };
}

// peerOf is the other user of a P2P topic, 0 for any other topic.
function peerOf(topic) {
  const p = /^p2p_(\d+)_(\d+)$/.exec(topic);
  if (!p) return 0;
  return Number(p[1]) === app.me ? Number(p[2]) : Number(p[1]);
}

// --- small views ---

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

function initials(name) {
  return name.split(/\s+/).filter(Boolean).slice(0, 2).map((w) => [...w][0].toUpperCase()).join("") || "?";
}

// avatar is a circle with the initials of name, replaced by the picture when there is one.
function avatar(name, key) {
  const a = el("span", "avatar", initials(name));
  let h = 0;
  for (const c of name) h = (h * 31 + c.codePointAt(0)) % 360;
  a.style.backgroundColor = `hsl(${h} 45% 55%)`;
  if (key) {
    download(key).then((url) => {
      const img = el("img");
      img.alt = "";
      img.src = url;
      a.replaceChildren(img);
    }, () => {});
  }
  return a;
}

function clock(ms) {
  if (!ms) return "";
  const d = new Date(ms);
  const now = new Date();
  if (d.toDateString() === now.toDateString()) return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  const opts = d.getFullYear() === now.getFullYear() ? { month: "short", day: "numeric" } : { year: "numeric", month: "short", day: "numeric" };
  return d.toLocaleDateString([], opts);
}

function summary(m) {
  if (!m) return "";
  if (m.status === "recalled") return "message recalled";
  switch (m.type) {
    case "text": return m.content?.text ?? m.text ?? "";
    case "image": return "Photo";
    case "system": return systemText(m.content);
    default: return m.text || `[${m.type}]`;
  }
}

function systemText(c) {
  const what = {
    recall: "A message was recalled", edit: "A message was edited", delete: "A message was deleted",
    reaction: c?.action === "remove" ? "A reaction was taken back" : `Reacted ${c?.emoji}`,
    pin: "A message was pinned", unpin: "A message was unpinned",
  }[c?.event];
  return what ?? (c?.event ? `(${c.event})` : "(system)");
}

// --- sign-in ---

function setStatus(state) {
  const s = $("status");
  s.dataset.state = state;
  s.textContent = { open: "connected", connecting: "connecting…", closed: "signed out", kicked: "signed in elsewhere" }[state] ?? state;
  // The banner: the SDK reconnects by itself with backoff; say so while it does.
  if (state === "open") app.connectedOnce = true;
  const banner = $("banner");
  banner.hidden = !(app.connectedOnce && (state === "connecting" || state === "kicked"));
  banner.dataset.state = state;
  banner.textContent = state === "kicked" ? "Signed in on this device elsewhere: this page stopped." : "Connection lost — reconnecting…";
}

async function signIn(token, device) {
  const client = new Client({ url: `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`, token, deviceId: device, platform: "web", store: localStorage });
  client.on("state", setStatus);
  // Presence pushes are live only: after a reconnect the page asks again (docs/PROTOCOL.md, PRESENCE).
  client.on("state", (s) => { if (s === "open" && app.me) queryPresence(); });
  // So are RECEIPT pushes: READ_STATE tells what was read meanwhile (docs/PROTOCOL.md, RECEIPT).
  client.on("state", (s) => { if (s === "open" && app.current) askReadState(); });
  client.on("receipt", onReceipt);
  client.on("message", onMessage);
  client.on("read", onRead);
  client.on("presence", setPresence);
  // A stopped client (kicked, or signed out) asks nothing more.
  client.on("state", (s) => { if (s === "kicked" || s === "closed") app.presenceWatch?.stop(); });
  app.presenceWatch = new PresenceRefresher(client, setPresence);
  client.on("typing", onTyping);
  client.on("dialogs", (ds) => { for (const d of ds) upsertDialog(d.topic, d); renderDialogs(); queryPresence(); });
  client.on("error", (e) => console.warn("imd:", e));
  app.client = client;
  app.token = token;
  const who = await client.connect();
  app.me = who.user_id;
  sessionStorage.setItem(saved.token, token);
  localStorage.setItem(saved.device, String(device));
  $("login").hidden = true;
  $("chat").hidden = false;
  $("signout").hidden = false;
  $("settings").hidden = false;
  showMe(device);
  client.settings().then(showSettings, (e) => console.warn("settings:", e));
  for (const d of await client.dialogs()) upsertDialog(d.topic, d);
  renderDialogs();
  queryPresence();
}

function showSettings(s) {
  for (const [id, field] of Object.entries(SWITCHES)) $(id).checked = !!s[field];
}

for (const [id, field] of Object.entries(SWITCHES)) {
  $(id).addEventListener("change", async () => {
    const box = $(id);
    try {
      showSettings(await app.client.settings({ [field]: box.checked }));
    } catch (e) {
      box.checked = !box.checked;
      flash(`Settings not saved: ${e.message}`);
    }
  });
}

async function showMe(device) {
  const p = await profile(app.me);
  $("me").replaceChildren(avatar(nameOf(p), p.avatar), el("span", "name", nameOf(p)), el("small", "", ` · device ${device}`));
}

// devToken asks the development sign-in for a token of userID (absent in production).
async function devToken(tenant, userID, nickname) {
  const body = { user_id: userID };
  if (nickname) body.nickname = nickname;
  const res = await fetch(`/dev/v1/tenants/${encodeURIComponent(tenant)}/signin`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
  const data = await res.json().catch(() => ({}));
  if (res.ok) return data.token;
  if (res.status === 404 && !data.msg?.includes("user")) throw new Error("this server has no sign-in by id (http.dev_signin is off): sign in with a token");
  if (res.status === 404) throw new Error(`no user ${userID}: give a name to create it`);
  throw new Error(data.msg || `sign-in: HTTP ${res.status}`);
}

function loginFailed(e) {
  $("login-error").textContent = e.message || String(e);
  app.client?.close();
}

$("signin").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("login-error").textContent = "";
  try {
    const tenant = $("tenant").value.trim();
    const token = await devToken(tenant, Number($("user-id").value), $("nickname").value.trim());
    localStorage.setItem(saved.tenant, tenant);
    await signIn(token, Number($("device").value));
  } catch (e) {
    loginFailed(e);
  }
});

$("token-signin").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("login-error").textContent = "";
  try {
    await signIn($("token").value.trim(), Number($("device").value));
  } catch (e) {
    loginFailed(e);
  }
});

$("signout").addEventListener("click", () => {
  app.client?.close();
  sessionStorage.removeItem(saved.token);
  location.reload();
});

// --- the conversation list ---

function upsertDialog(topic, fields = {}) {
  const d = app.dialogs.get(topic) ?? { topic, score: 0, last_seq: 0, read_seq: 0, unread: 0, preview: null };
  Object.assign(d, fields);
  app.dialogs.set(topic, d);
  return d;
}

// renderDialogs lists the conversations by last activity, newest first.
function renderDialogs() {
  const sorted = [...app.dialogs.values()].sort((a, b) => b.score - a.score || a.topic.localeCompare(b.topic));
  $("dialogs").replaceChildren(...sorted.map(dialogItem));
}

function dialogItem(d) {
  const li = el("li", d.topic === app.current ? "current" : "");
  li.dataset.topic = d.topic;
  const pic = el("span", "pic");
  pic.append(el("span", "avatar", ""));
  const peer = peerOf(d.topic);
  if (peer) pic.append(presenceDot(peer));
  const title = el("span", "title", "");
  const time = el("span", "time", clock(d.score || d.preview?.created_at));
  const preview = el("span", "preview", previewText(d.preview));
  const unread = el("span", "unread", d.unread > 0 ? String(d.unread) : "");
  const top = el("span", "line");
  top.append(title, time);
  const bottom = el("span", "line");
  bottom.append(preview, unread);
  const text = el("span", "text");
  text.append(top, bottom);
  li.append(pic, text);
  conversation(d.topic).then((c) => {
    title.textContent = c.title;
    pic.firstChild.replaceWith(avatar(c.title, c.avatar));
  });
  li.addEventListener("click", () => openTopic(d.topic));
  return li;
}

function previewText(p) {
  if (!p) return "";
  const text = summary(p);
  if (p.from === app.me) return `You: ${text}`;
  return text;
}

// --- one conversation ---

async function openTopic(topic) {
  stopTyping();
  app.current = topic;
  app.messages = new Map();
  app.oldest = 0;
  app.olderDone = false;
  app.loadingOlder = null;
  app.stick = true;
  setDraft(null);
  upsertDialog(topic);
  $("messages").replaceChildren();
  $("readmark").textContent = "";
  $("compose").hidden = false;
  app.pins = new Set();
  app.readBy = new Map();
  showPins(topic, []);
  renderTyping();
  renderDialogs();
  conversationHeader(topic);
  loadPins(topic);
  const page = await app.client.history(topic, 0, PAGE);
  if (topic !== app.current) return;
  for (const m of page) showMessage(m);
  app.olderDone = page.length < PAGE;
  keepAtEnd();
  queryPresence();
  askReadState();
  await markRead();
}

// conversationHeader fills the bar above the conversation: its picture and title, and with
// one person, whether they are online (the pinned bar below it is showPins').
async function conversationHeader(topic) {
  const header = $("conversation-header");
  header.dataset.topic = topic;
  $("topic").textContent = "";
  $("presence").textContent = "";
  const c = await conversation(topic);
  if (header.dataset.topic !== topic) return;
  $("topic").textContent = c.title;
  const peer = peerOf(topic);
  $("conversation-avatar").replaceChildren(avatar(c.title, c.avatar), ...(peer ? [presenceDot(peer)] : []));
  $("presence").textContent = peer ? presenceText(peer) : "";
}

// loadOlder loads the GET_HISTORY page before the oldest message shown, across months: the
// server walks back through the month tables (PROTOCOL §3), the page only follows before_seq.
function loadOlder() {
  if (app.olderDone || app.loadingOlder || !app.oldest) return app.loadingOlder;
  const topic = app.current;
  const list = $("messages");
  app.loadingOlder = app.client.history(topic, app.oldest, PAGE).then((page) => {
    if (topic !== app.current) return;
    const below = list.scrollHeight - list.scrollTop;
    for (const m of page) showMessage(m);
    list.scrollTop = list.scrollHeight - below; // the messages read stay where they were
    app.olderDone = page.length < PAGE;
  }).finally(() => { app.loadingOlder = null; });
  return app.loadingOlder;
}

$("messages").addEventListener("scroll", () => {
  const list = $("messages");
  app.stick = list.scrollHeight - list.scrollTop - list.clientHeight < 60;
  if (list.scrollTop < 60) loadOlder();
});

// keepAtEnd scrolls to the newest message while the reader is there: after an arrival, and
// after a name, quote or picture filled in and made the list taller.
function keepAtEnd() {
  const list = $("messages");
  if (app.stick) list.scrollTop = list.scrollHeight;
}

// showMessage puts m in seq order, or redraws it in place when it is shown already.
function showMessage(m) {
  if (m.topic !== app.current || (m.type === "system" && LIVE_EVENTS.includes(m.content?.event))) return;
  if (m.type === "system" && ["recall", "edit", "delete"].includes(m.content?.event)) {
    refresh(m.content.seq);
    return;
  }
  app.messages.set(m.seq, m);
  if (!app.oldest || m.seq < app.oldest) app.oldest = m.seq;
  const li = messageItem(m);
  const list = $("messages");
  const old = list.querySelector(`li[data-seq="${m.seq}"]`);
  if (old) {
    old.replaceWith(li);
    return;
  }
  const after = [...list.children].find((e) => Number(e.dataset.seq) > m.seq);
  list.insertBefore(li, after ?? null);
  if (!after) keepAtEnd();
}

// refresh fetches seq again after a change event and redraws it, and any quote of it.
async function refresh(seq) {
  const topic = app.current;
  if (!app.messages.has(seq)) return;
  const m = await app.client.message(topic, seq);
  if (topic !== app.current) return;
  if (!m) {
    app.messages.delete(seq);
    $("messages").querySelector(`li[data-seq="${seq}"]`)?.remove();
    return;
  }
  showMessage(m);
  for (const r of app.messages.values()) if (r.reply_seq === seq) showMessage(r);
}

function messageItem(m) {
  const mine = m.from === app.me;
  const li = el("li", [mine ? "mine" : "", m.status === "recalled" ? "recalled" : "", m.type === "system" ? "system" : ""].filter(Boolean).join(" "));
  li.dataset.seq = String(m.seq);
  li.dataset.from = String(m.from);
  if (m.type === "system") {
    li.textContent = systemText(m.content);
    return li;
  }
  const pic = el("span", "pic");
  pic.append(el("span", "avatar", ""));
  if (!mine) pic.append(presenceDot(m.from));
  const bubble = el("div", "bubble");
  const from = el("span", "from", mine ? "You" : "");
  bubble.append(from);
  profile(m.from).then((p) => {
    if (!mine) from.textContent = nameOf(p);
    pic.firstChild.replaceWith(avatar(nameOf(p), p.avatar));
    keepAtEnd();
  });
  if (m.content?.forward) bubble.append(forwarded(m.content.forward));
  if (m.reply_seq) bubble.append(quote(m.reply_seq));
  bubble.append(messageBody(m), reactionsRow(m), messageFooter(m));
  li.append(pic, bubble);
  return li;
}

function messageBody(m) {
  if (m.status === "recalled") return el("span", "body recalled-mark", mine(m) ? "You recalled this message" : "This message was recalled");
  if (m.type === "image") return image(m.content ?? {});
  return el("span", "body text", m.content?.text ?? JSON.stringify(m.content));
}

function mine(m) { return m.from === app.me; }

// image shows the thumbnail when the server made one (content.thumb_key, with the picture's
// width and height), else the picture itself; a click opens the full picture.
function image(c) {
  const img = el("img", "body image");
  img.alt = c.name || "image";
  const box = fit(c.width, c.height);
  if (box) {
    img.width = box.width;
    img.height = box.height;
  }
  img.addEventListener("load", keepAtEnd);
  download(c.thumb_key || c.key).then((url) => { img.src = url; }, () => { img.alt = "(image unavailable)"; });
  img.addEventListener("click", async () => window.open(await download(c.key), "_blank", "noopener"));
  return img;
}

// fit scales width × height down into 240 × 240 pixels, keeping its shape.
function fit(width, height) {
  if (!(width > 0 && height > 0)) return null;
  const k = Math.min(1, 240 / Math.max(width, height));
  return { width: Math.round(width * k), height: Math.round(height * k) };
}

// quote shows the message replied to: its sender and text, loaded when it is not shown.
function quote(seq) {
  const q = el("blockquote", "quote");
  q.dataset.seq = String(seq);
  const who = el("span", "quote-from", "");
  const what = el("span", "quote-text", "…");
  q.append(who, what);
  const shown = app.messages.get(seq);
  (shown ? Promise.resolve(shown) : app.client.message(app.current, seq)).then(async (r) => {
    if (!r) {
      what.textContent = "(message not available)";
      return;
    }
    who.textContent = mine(r) ? "You" : nameOf(await profile(r.from));
    what.textContent = summary(r);
    keepAtEnd();
  }, () => { what.textContent = "(message not available)"; });
  return q;
}

// forwarded labels a copy FORWARD_MESSAGE wrote with whose message it was.
function forwarded(origin) {
  const label = el("span", "forwarded", "Forwarded");
  profile(origin.from).then((p) => { label.textContent = `Forwarded from ${origin.from === app.me ? "you" : nameOf(p)}`; });
  return label;
}

// messageFooter is the line under a message: its time, an edited mark, the read receipt of
// one's own, and what one may do with it (reply, react, pin, forward; edit and recall one's own).
function messageFooter(m) {
  const footer = el("span", "meta");
  footer.append(el("time", "", clock(m.created_at)));
  if (m.edited_at && m.status !== "recalled") footer.append(el("span", "edited", "edited"));
  if (m.status === "recalled") return footer;
  if (mine(m)) footer.append(receiptMark(m.seq));
  footer.append(action("Reply", () => setDraft({ kind: "reply", message: m })));
  footer.append(action("React", () => {
    const open = footer.querySelector(".palette");
    if (open) open.remove();
    else footer.append(palette(m));
  }));
  const pinned = app.pins.has(m.seq);
  footer.append(action(pinned ? "Unpin" : "Pin", () => pin(m.topic, m.seq, !pinned)));
  footer.append(action("Forward", () => pickForward(m)));
  if (mine(m)) {
    if (m.type === "text") footer.append(action("Edit", () => setDraft({ kind: "edit", message: m })));
    footer.append(action("Recall", () => recall(m)));
  }
  return footer;
}

function action(label, fn) {
  const b = el("button", `action ${label.toLowerCase()}`, label);
  b.type = "button";
  b.addEventListener("click", (ev) => {
    ev.stopPropagation();
    fn();
  });
  return b;
}

async function recall(m) {
  try {
    showMessage(await app.client.recall(m.topic, m.seq));
  } catch (e) {
    flash(e.code === Code.FORBIDDEN ? "Too late to recall this message." : `Recall failed: ${e.message}`);
  }
}

function flash(text) {
  $("readmark").textContent = text;
}

// --- read receipts ---

// receiptMark is the mark under one's own message of seq, which paintReceipt keeps current.
function receiptMark(seq) {
  const mark = el("button", "receipt");
  mark.type = "button";
  mark.dataset.seq = String(seq);
  mark.addEventListener("click", (ev) => {
    ev.stopPropagation();
    if (mark.title) flash(mark.title);
  });
  paintReceipt(mark);
  return mark;
}

// paintReceipt draws what is known of a message: in P2P ✓ stored (its SEND_ACK), ✓✓ delivered
// and ✓✓ read from the peer's RECEIPTs; in a group "read by K of N" from READ_STATE, with the
// readers' names in the title where the answer lists them (docs/PROTOCOL.md, READ_STATE).
function paintReceipt(mark) {
  const seq = Number(mark.dataset.seq);
  const r = app.receipts.get(app.current) ?? { delivered: 0, read: 0 };
  const s = app.readBy.get(seq);
  const state = peerOf(app.current) ? (r.read >= seq ? "read" : r.delivered >= seq ? "delivered" : "sent")
    : s?.read ? "read" : "sent";
  mark.dataset.state = state;
  mark.textContent = s && !peerOf(app.current) ? `✓ read by ${s.read} of ${s.of}` : { sent: "✓", delivered: "✓✓", read: "✓✓ read" }[state];
  mark.title = { sent: "Sent", delivered: "Delivered", read: "Read" }[state];
  if (!s?.readers?.length || peerOf(app.current)) return;
  Promise.all(s.readers.map(profile)).then((ps) => {
    if (mark.isConnected) mark.title = `Read by ${ps.map(nameOf).join(", ")}`;
  });
}

function paintReceipts() {
  for (const mark of $("messages").querySelectorAll(".receipt")) paintReceipt(mark);
}

// onReceipt keeps the peer's highest delivered and read seqs of each P2P conversation; the
// seqs only grow, as the read mark never moves back (docs/PROTOCOL.md, READ_MESSAGE).
function onReceipt(p) {
  const r = app.receipts.get(p.topic) ?? { delivered: 0, read: 0 };
  r.delivered = Math.max(r.delivered, p.delivered_seq ?? 0, p.read_seq ?? 0);
  r.read = Math.max(r.read, p.read_seq ?? 0);
  app.receipts.set(p.topic, r);
  if (p.topic === app.current) paintReceipts();
}

// askReadState asks READ_STATE after one's newest messages of the open conversation, one at
// a time: in P2P the newest the peer read answers for all before it, and the peer's delivered
// mark for every message up to it (RECEIPT pushes are live only, so after a load or reconnect
// this is where ✓✓ and ✓✓ read come from).
function askReadState() {
  const topic = app.current;
  if (app.readStateAsked === topic) return;
  app.readStateAsked = topic;
  const seqs = [...app.messages.values()].filter((m) => mine(m) && m.type !== "system" && m.status !== "recalled")
    .map((m) => m.seq).sort((x, y) => y - x).slice(0, READ_STATE_LATEST);
  (async () => {
    for (const seq of seqs) {
      const s = await app.client.readState(topic, seq);
      if (topic !== app.current) return;
      if (!peerOf(topic)) {
        app.readBy.set(seq, s);
        continue;
      }
      // The peer's delivered mark answers for every message up to it, delivered while away too.
      if (s.delivered_seq) onReceipt({ topic, delivered_seq: s.delivered_seq });
      if (s.read) {
        onReceipt({ topic, read_seq: seq });
        return;
      }
    }
  })().catch((e) => console.warn("read state:", e)).finally(() => {
    if (app.readStateAsked === topic) app.readStateAsked = "";
    if (topic === app.current) paintReceipts();
  });
}

// --- reactions ---

// reactionsRow shows the message's reaction summary; a click on one takes the user's off, or
// adds it.
function reactionsRow(m) {
  const row = el("span", "reactions");
  for (const r of m.reactions ?? []) {
    const b = el("button", r.mine ? "reaction mine" : "reaction", `${r.emoji} ${r.count}`);
    b.type = "button";
    b.dataset.emoji = r.emoji;
    b.addEventListener("click", () => react(m, r.emoji, !r.mine));
    row.append(b);
  }
  return row;
}

function palette(m) {
  const p = el("span", "palette");
  for (const emoji of EMOJIS) {
    const b = el("button", "", emoji);
    b.type = "button";
    b.dataset.emoji = emoji;
    b.addEventListener("click", () => react(m, emoji, true));
    p.append(b);
  }
  return p;
}

async function react(m, emoji, add) {
  try {
    const r = add ? await app.client.addReaction(m.topic, m.seq, emoji) : await app.client.removeReaction(m.topic, m.seq, emoji);
    setReactions(m.topic, m.seq, r.reactions ?? []);
  } catch (e) {
    flash(`Reaction failed: ${e.message}`);
  }
}

function setReactions(topic, seq, reactions) {
  const m = app.messages.get(seq);
  if (topic === app.current && m) showMessage({ ...m, reactions });
}

// applyReaction folds a live reaction event into the shown summary: count is the emoji's
// count after the change, from the one who reacted (docs/PROTOCOL.md, ADD_REACTION).
function applyReaction(topic, e, from) {
  const m = app.messages.get(e.seq);
  if (topic !== app.current || !m) return;
  const list = (m.reactions ?? []).map((r) => ({ ...r }));
  let r = list.find((x) => x.emoji === e.emoji);
  if (!r) list.push(r = { emoji: e.emoji, count: 0, mine: false });
  r.count = e.count;
  if (from === app.me) r.mine = e.action === "add";
  setReactions(topic, e.seq, list.filter((x) => x.count > 0));
}

// --- pins ---

async function loadPins(topic) {
  try {
    showPins(topic, await app.client.pins(topic));
  } catch (e) {
    console.warn("pins:", e);
  }
}

async function pin(topic, seq, on) {
  try {
    showPins(topic, on ? await app.client.pin(topic, seq) : await app.client.unpin(topic, seq));
  } catch (e) {
    flash(e.code === Code.FORBIDDEN ? "Only the group's owner and admins may pin." : `Pin failed: ${e.message}`);
  }
}

// showPins fills the pinned bar under the header, and turns Pin into Unpin (and back) on the
// messages whose state changed.
function showPins(topic, pins) {
  if (topic !== app.current) return;
  const before = app.pins;
  app.pins = new Set(pins.map((p) => p.seq));
  $("pins").hidden = !pins.length;
  $("pins").replaceChildren(...pins.map((p) => pinItem(topic, p.seq)));
  for (const m of app.messages.values()) if (before.has(m.seq) !== app.pins.has(m.seq)) showMessage(m);
}

function pinItem(topic, seq) {
  const li = el("li");
  li.dataset.seq = String(seq);
  const text = el("span", "pin-text", "…");
  li.append(el("span", "pin-mark", "📌"), text, action("Unpin", () => pin(topic, seq, false)));
  const shown = app.messages.get(seq);
  (shown ? Promise.resolve(shown) : app.client.message(topic, seq)).then(async (m) => {
    if (!m) {
      text.textContent = "(message not available)";
      return;
    }
    text.textContent = `${mine(m) ? "You" : nameOf(await profile(m.from))}: ${summary(m)}`;
  }, () => { text.textContent = "(message not available)"; });
  li.addEventListener("click", () => $("messages").querySelector(`li[data-seq="${seq}"]`)?.scrollIntoView({ block: "center" }));
  return li;
}

// --- forwarding ---

// pickForward lists the user's other conversations; a click sends a copy there.
function pickForward(m) {
  const targets = [...app.dialogs.values()].filter((d) => d.topic !== m.topic);
  $("forward-list").replaceChildren(...targets.map((d) => {
    const li = el("li", "", d.topic);
    li.dataset.topic = d.topic;
    conversation(d.topic).then((c) => { li.textContent = c.title; });
    li.addEventListener("click", () => forward(m, d.topic));
    return li;
  }));
  $("forward-none").hidden = targets.length > 0;
  $("forward").hidden = false;
}

$("forward-cancel").addEventListener("click", () => { $("forward").hidden = true; });

async function forward(m, topic) {
  $("forward").hidden = true;
  try {
    const ack = await app.client.forward(m.topic, m.seq, { topic });
    const copy = await app.client.message(ack.topic, ack.seq);
    if (copy) onMessage(copy);
    flash(`Forwarded to ${(await conversation(ack.topic)).title}`);
  } catch (e) {
    flash(`Not forwarded: ${e.message}`);
  }
}

// --- presence ---

// presenceDot is a dot that setPresence keeps green while user is online, grey while offline,
// hollow while the server answers "unknown" (its registry heals, docs/PROTOCOL.md
// QUERY_PRESENCE), and hidden until the first answer.
function presenceDot(user) {
  const dot = el("span", "dot");
  dot.dataset.user = String(user);
  paintDot(dot);
  return dot;
}

function paintDot(dot) {
  const user = Number(dot.dataset.user);
  dot.dataset.state = app.presence.get(user)?.state ?? "";
  dot.title = presenceText(user);
}

function presenceText(user) {
  const p = app.presence.get(user);
  if (p?.state === "online") return "online";
  // Never "last seen" while unknown: the user may be online meanwhile (DESIGN §13 "Unknown until healed").
  if (p?.state === "unknown") return "status unknown";
  if (p?.state !== "offline") return "";
  return p.last_seen ? `last seen ${clock(p.last_seen)}` : "offline";
}

function setPresence(p) {
  app.presence.set(p.user_id, p);
  for (const dot of document.querySelectorAll(`.dot[data-user="${p.user_id}"]`)) paintDot(dot);
  if (peerOf(app.current) === p.user_id) $("presence").textContent = presenceText(p.user_id);
}

// queryPresence asks after the people on screen: the peers in the conversation list and the
// senders in the open conversation. Those answered "unknown" are asked again by the SDK's
// PresenceRefresher, with backoff, until known.
async function queryPresence() {
  const senders = [...app.messages.values()].map((m) => m.from);
  const users = [...new Set([...app.dialogs.keys()].map(peerOf).concat(senders))].filter((u) => u && u !== app.me);
  try {
    await app.presenceWatch.query(users);
  } catch (e) {
    console.warn("presence:", e);
  }
}

// --- typing ---

$("text").addEventListener("input", () => {
  if (!$("text").value) {
    stopTyping();
    return;
  }
  const now = Date.now();
  if (!app.current || (app.typing.topic === app.current && now - app.typing.at < TYPING_EVERY)) return;
  app.typing = { topic: app.current, at: now };
  app.client.typing(app.current, true).catch((e) => console.warn("typing:", e));
});

// stopTyping says typing false where the user said true: on send, on clearing the text, on
// leaving the conversation.
function stopTyping() {
  const { topic } = app.typing;
  if (!topic) return;
  app.typing = { topic: "", at: 0 };
  app.client.typing(topic, false).catch((e) => console.warn("typing:", e));
}

// onTyping shows a notice until typing false, a message from the typist (onMessage), or its
// expires_in without a new one (docs/PROTOCOL.md, TYPING_NOTICE).
function onTyping(n) {
  const typists = app.typists.get(n.topic) ?? new Map();
  app.typists.set(n.topic, typists);
  clearTimeout(typists.get(n.user_id));
  typists.delete(n.user_id);
  if (n.typing) typists.set(n.user_id, setTimeout(() => onTyping({ ...n, typing: false }), n.expires_in || 6000));
  if (n.topic === app.current) renderTyping();
}

async function renderTyping() {
  const drawn = ++app.typingDrawn;
  const users = [...(app.typists.get(app.current)?.keys() ?? [])];
  const names = (await Promise.all(users.map(profile))).map(nameOf);
  if (drawn !== app.typingDrawn) return;
  $("typing").textContent = names.length === 0 ? "" : names.length === 1 ? `${names[0]} is typing…`
    : names.length === 2 ? `${names[0]} and ${names[1]} are typing…` : `${names.length} people are typing…`;
}

// --- live ---

function onMessage(m) {
  const d = app.dialogs.get(m.topic);
  upsertDialog(m.topic, {
    last_seq: Math.max(d?.last_seq ?? 0, m.seq),
    score: Math.max(d?.score ?? 0, m.created_at ?? 0),
    preview: m,
  });
  if (m.type !== "system" && app.typists.get(m.topic)?.has(m.from)) onTyping({ topic: m.topic, user_id: m.from, typing: false });
  const event = m.type === "system" ? m.content?.event : "";
  if (m.topic === app.current) {
    if (event === "reaction") applyReaction(m.topic, m.content, m.from);
    if (event === "pin" || event === "unpin") loadPins(m.topic);
    showMessage(m);
    markRead();
  } else if (m.from !== app.me && m.type !== "system") {
    app.dialogs.get(m.topic).unread++;
  }
  renderDialogs();
}

// markRead moves the read mark of the open conversation to its newest shown message.
async function markRead() {
  if (!app.messages.size) return;
  const seq = Math.max(...app.messages.keys());
  const d = upsertDialog(app.current, { unread: 0 });
  renderDialogs();
  if (seq <= d.read_seq) return;
  try {
    const w = await app.client.markRead(app.current, seq);
    d.read_seq = w.seq;
    if (w.topic === app.current) $("readmark").textContent = `read up to #${w.seq}`;
  } catch (e) {
    console.warn("read mark:", e);
  }
}

// onRead is a read mark set by another device of this user.
function onRead(w) {
  const d = upsertDialog(w.topic, { read_seq: w.seq, unread: 0 });
  if (w.topic === app.current) $("readmark").textContent = `read up to #${d.read_seq}`;
  renderDialogs();
}

// --- composing ---

// setDraft shows what the next send is: a reply, an edit, an image, or (null) plain text.
function setDraft(draft) {
  app.draft = draft;
  $("draft").hidden = !draft;
  $("draft-image").hidden = draft?.kind !== "image";
  if (!draft) {
    $("draft-label").textContent = "";
    $("image").value = "";
    return;
  }
  if (draft.kind === "image") {
    $("draft-label").textContent = `Send ${draft.file.name} (${draft.width}×${draft.height})`;
    return;
  }
  const m = draft.message;
  $("draft-label").textContent = draft.kind === "edit" ? `Editing: ${summary(m)}` : `Replying to: ${summary(m)}`;
  if (draft.kind === "edit") $("text").value = m.content?.text ?? "";
  $("text").focus();
}

$("draft-cancel").addEventListener("click", () => setDraft(null));

$("image").addEventListener("change", async () => {
  const file = $("image").files[0];
  if (!file) return;
  const bitmap = await createImageBitmap(file);
  const draft = { kind: "image", file, width: bitmap.width, height: bitmap.height };
  bitmap.close();
  // A data: URL, which the page's policy lets images load (img-src 'self' data:).
  const reader = new FileReader();
  reader.onload = () => { $("draft-image").src = reader.result; };
  reader.readAsDataURL(file);
  setDraft(draft);
});

// uploadImage puts the file in the object store through a signed PUT, confirms it so the
// server makes its thumbnail (docs/PROTOCOL.md, "Image thumbnails"), and answers the content
// of its image message: the server's upright size when it made one, else the size the browser
// measured.
async function uploadImage({ file, width, height }) {
  const up = await api("POST", "/api/v1/uploads", { content_type: file.type, size: file.size });
  const res = await fetch(up.url, { method: up.method || "PUT", headers: up.headers, body: file });
  if (!res.ok) throw new Error(`upload: HTTP ${res.status}`);
  const done = await api("POST", "/api/v1/uploads/complete", { key: up.key });
  const content = { key: up.key, name: file.name, size: file.size, width, height };
  if (done.thumb_key) Object.assign(content, { thumb_key: done.thumb_key, width: done.width, height: done.height });
  return content;
}

$("compose").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const topic = app.current;
  const draft = app.draft;
  const text = $("text").value;
  if (!topic || (!text && draft?.kind !== "image")) return;
  $("text").value = "";
  setDraft(null);
  stopTyping();
  app.stick = true; // what one sends is shown, however far back one had scrolled
  try {
    if (draft?.kind === "edit") {
      const m = draft.message;
      showMessage(await app.client.edit(topic, m.seq, { ...m.content, text }, m.version));
      return;
    }
    const req = draft?.kind === "image"
      ? { topic, type: "image", content: await uploadImage(draft) }
      : { topic, type: "text", content: { text } };
    if (draft?.kind === "reply") req.reply_seq = draft.message.seq;
    const ack = await app.client.send(req);
    const m = { ...req, seq: ack.seq, msg_id: ack.msg_id, from: app.me, status: "normal", version: 1, created_at: ack.server_time, reply_seq: req.reply_seq ?? 0 };
    onMessage(m);
  } catch (e) {
    flash(`Not sent: ${e.message}`);
  }
});

$("open").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const topic = $("open-topic").value.trim();
  if (topic) openTopic(topic);
  $("open-topic").value = "";
});

// A page left for another may stay alive in the browser's back-forward cache, its WebSocket
// open: its user would read as online to everyone (docs/PROTOCOL.md, PRESENCE). Leaving
// closes the connection; coming back signs in again from the tab's token.
addEventListener("pagehide", () => app.client?.close());
addEventListener("pageshow", (ev) => { if (ev.persisted) location.reload(); });
setInterval(() => { if (app.current && !peerOf(app.current) && document.visibilityState === "visible") askReadState(); }, READ_STATE_EVERY);

// --- start ---

$("device").value = localStorage.getItem(saved.device) ?? String(1 + Math.floor(Math.random() * 1e9));
$("tenant").value = localStorage.getItem(saved.tenant) ?? "default";
localStorage.removeItem(saved.token); // where versions before issue 33 kept it
const token = sessionStorage.getItem(saved.token);
if (token) {
  $("token").value = token;
  signIn(token, Number($("device").value)).catch(loginFailed);
}
