// The web chat: a small app on the imd JavaScript SDK (/sdk/imd.js). Sign in with a token,
// the conversation list from SYNC_INBOX, history, send, live receive and read marks. The
// SDK's cursors live in localStorage, so a reload catches up with what it missed.
//
// The token is kept in sessionStorage, never localStorage (issue 33, DESIGN §12): it lives as
// long as the tab, so a reload or a return to the page in the same tab signs in again, while
// closing the tab forgets it — nothing on the disk for the next user of the browser, nothing
// shared with other tabs. Memory alone would forget it at every reload; a cookie would ride
// along with every request to the origin. Any script of the origin can read either store, so
// the page's Content-Security-Policy runs only its own files.
import { Client } from "/sdk/imd.js";

const $ = (id) => document.getElementById(id);
const saved = { token: "imd.chat.token", device: "imd.chat.device" };

const app = {
  client: null,
  me: 0,
  current: "",
  dialogs: new Map(), // topic → {topic, last_seq, read_seq, unread}
  shown: new Set(), // seqs shown for the current topic
};

function setStatus(state) {
  const s = $("status");
  s.dataset.state = state;
  s.textContent = { open: "connected", connecting: "connecting…", closed: "signed out", kicked: "signed in elsewhere" }[state] ?? state;
}

async function signIn(token, device) {
  const client = new Client({ url: `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`, token, deviceId: device, platform: "web", store: localStorage });
  client.on("state", setStatus);
  client.on("message", onMessage);
  client.on("read", onRead);
  client.on("error", (e) => console.warn("imd:", e));
  app.client = client;
  const who = await client.connect();
  app.me = who.user_id;
  sessionStorage.setItem(saved.token, token);
  localStorage.setItem(saved.device, String(device));
  $("me").textContent = `user ${who.user_id} · device ${device}`;
  $("login").hidden = true;
  $("chat").hidden = false;
  $("signout").hidden = false;
  for (const d of await client.dialogs()) upsertDialog(d.topic, d);
  renderDialogs();
}

function upsertDialog(topic, fields = {}) {
  const d = app.dialogs.get(topic) ?? { topic, last_seq: 0, read_seq: 0, unread: 0 };
  Object.assign(d, fields);
  app.dialogs.set(topic, d);
  return d;
}

function renderDialogs() {
  const ul = $("dialogs");
  ul.replaceChildren();
  const sorted = [...app.dialogs.values()].sort((a, b) => (b.last_seq > 0) - (a.last_seq > 0) || a.topic.localeCompare(b.topic));
  for (const d of sorted) {
    const li = document.createElement("li");
    li.dataset.topic = d.topic;
    li.className = d.topic === app.current ? "current" : "";
    const name = document.createElement("span");
    name.textContent = d.topic;
    const unread = document.createElement("span");
    unread.className = "unread";
    unread.textContent = d.unread > 0 ? String(d.unread) : "";
    li.append(name, unread);
    li.addEventListener("click", () => openTopic(d.topic));
    ul.append(li);
  }
}

async function openTopic(topic) {
  app.current = topic;
  app.shown = new Set();
  upsertDialog(topic);
  $("topic").textContent = topic;
  $("messages").replaceChildren();
  $("readmark").textContent = "";
  $("compose").hidden = false;
  renderDialogs();
  const page = await app.client.history(topic, 0, 50);
  for (const m of page.reverse()) showMessage(m);
  await markRead();
}

function showMessage(m) {
  if (m.topic !== app.current || app.shown.has(m.seq)) return;
  app.shown.add(m.seq);
  const li = document.createElement("li");
  li.dataset.seq = String(m.seq);
  li.className = m.from === app.me ? "mine" : "";
  const from = document.createElement("span");
  from.className = "from";
  from.textContent = m.from === app.me ? "me" : `user ${m.from}`;
  const text = document.createElement("span");
  text.className = "text";
  text.textContent = m.status === "recalled" ? "(recalled)" : m.content?.text ?? JSON.stringify(m.content);
  li.append(from, text);
  // Keep seq order: a caught-up message may arrive after a later live one.
  const after = [...$("messages").children].find((el) => Number(el.dataset.seq) > m.seq);
  $("messages").insertBefore(li, after ?? null);
  li.scrollIntoView({ block: "nearest" });
}

function onMessage(m) {
  const d = upsertDialog(m.topic, { last_seq: Math.max(app.dialogs.get(m.topic)?.last_seq ?? 0, m.seq) });
  if (m.topic === app.current) {
    showMessage(m);
    markRead();
  } else if (m.from !== app.me) {
    d.unread++;
  }
  renderDialogs();
}

// markRead moves the read mark of the open conversation to its newest shown message.
async function markRead() {
  const seqs = [...app.shown];
  if (!seqs.length) return;
  const seq = Math.max(...seqs);
  const d = upsertDialog(app.current, { unread: 0 });
  if (seq <= d.read_seq) return;
  try {
    const w = await app.client.markRead(app.current, seq);
    d.read_seq = w.seq;
    $("readmark").textContent = `read up to #${w.seq}`;
  } catch (e) {
    console.warn("read mark:", e);
  }
  renderDialogs();
}

// onRead is a read mark set by another device of this user.
function onRead(w) {
  const d = upsertDialog(w.topic, { read_seq: w.seq, unread: 0 });
  if (w.topic === app.current) $("readmark").textContent = `read up to #${d.read_seq}`;
  renderDialogs();
}

$("login").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("login-error").textContent = "";
  try {
    await signIn($("token").value.trim(), Number($("device").value));
  } catch (e) {
    $("login-error").textContent = e.message || String(e);
    app.client?.close();
  }
});

$("open").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const topic = $("open-topic").value.trim();
  if (topic) openTopic(topic);
  $("open-topic").value = "";
});

$("compose").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const text = $("text").value;
  if (!text || !app.current) return;
  $("text").value = "";
  const topic = app.current;
  const ack = await app.client.send({ topic, type: "text", content: { text } });
  upsertDialog(topic, { last_seq: Math.max(app.dialogs.get(topic)?.last_seq ?? 0, ack.seq) });
  showMessage({ topic, seq: ack.seq, from: app.me, content: { text }, status: "normal" });
  markRead();
});

$("signout").addEventListener("click", () => {
  app.client?.close();
  sessionStorage.removeItem(saved.token);
  location.reload();
});

$("device").value = localStorage.getItem(saved.device) ?? String(1 + Math.floor(Math.random() * 1e9));
localStorage.removeItem(saved.token); // where versions before issue 33 kept it
const token = sessionStorage.getItem(saved.token);
if (token) {
  $("token").value = token;
  signIn(token, Number($("device").value)).catch((e) => {
    $("login-error").textContent = e.message || String(e);
  });
}
