// Types of imd.js, the imd JavaScript SDK (PROTOCOL.md §7: the frame protocol over WebSocket).

export const SUBPROTOCOL: "imd.v1";
export const HEADER_LEN: 23;
export const MAX_BODY: 65536;

export const Cmd: Readonly<{
  AUTH: 1; HEARTBEAT: 2; GENERATE_MSG_ID: 3; SEND_MESSAGE: 4; SEND_ACK: 5; MESSAGE: 6;
  PUSH_ACK: 7; READ_MESSAGE: 8; RECALL_MESSAGE: 9; SYNC_INBOX: 10; SYNC_INBOX_FINISH: 11;
  SYNC_MESSAGES: 12; SYNC_MESSAGES_FINISH: 13; KICK: 14; EDIT_MESSAGE: 15; DELETE_MESSAGES: 16;
  EVENT: 17; GET_HISTORY: 18; QUERY_PRESENCE: 19; PRESENCE: 20; TYPING: 21; TYPING_NOTICE: 22;
  SETTINGS: 23; ADD_REACTION: 25; REMOVE_REACTION: 26; GET_REACTIONS: 27;
  PIN_MESSAGE: 28; UNPIN_MESSAGE: 29; GET_PINS: 30; FORWARD_MESSAGE: 31;
}>;

export const Code: Readonly<{
  OK: 0; INVALID_ARGUMENT: 40001; UNAUTHENTICATED: 40101; FORBIDDEN: 40301; NOT_FOUND: 40401;
  CONFLICT: 40901; TOO_LARGE: 41301; RATE_LIMITED: 42901; INTERNAL: 50001; BUSY: 50301;
}>;

/** An error response of the server (PROTOCOL §5); code 0 is a local failure. */
export class ImdError extends Error {
  constructor(code: number, msg: string);
  readonly code: number;
}

export interface Frame {
  command: number;
  flags: number;
  requestId: bigint;
  sequenceId: number;
  /** The body as sent: zlib-compressed when flags & 1. */
  body: Uint8Array;
}

export interface Envelope<T = unknown> {
  code: number;
  msg: string;
  request_id: string;
  data: T | null;
}

export function encodeFrame(command: number, requestId: number | bigint, sequenceId: number, body?: object | Uint8Array): Uint8Array;
export function decodeFrame(data: ArrayBuffer | Uint8Array): Frame;
export function inflate(bytes: Uint8Array): Promise<Uint8Array>;
export function envelopeOf<T = unknown>(frame: Frame): Promise<Envelope<T>>;
/** The wait in ms before reconnect attempt `attempt` (0 first): min doubled per attempt up to max, then a random half to all of it. */
export function backoffDelay(attempt: number, minMs: number, maxMs: number, random?: () => number): number;

/** The message object of PROTOCOL §4. */
export interface Message {
  topic: string;
  conversation_id: number;
  seq: number;
  msg_id: number;
  from: number;
  client_msg_id: string;
  type: "text" | "image" | "voice" | "video" | "sticker" | "gif" | "file" | "location" | "system";
  content: Record<string, unknown>;
  mentions: number[] | null;
  mention_all: boolean;
  reply_seq: number;
  status: "normal" | "recalled" | "deleted";
  version: number;
  created_at: number;
  edited_at?: number;
  /** The reaction summary, in history and sync pages only; absent when there is none. */
  reactions?: ReactionCount[];
}

/** One emoji of a message's reaction summary; mine: the user is one of those who reacted. */
export interface ReactionCount {
  emoji: string;
  count: number;
  mine: boolean;
}

export interface ReactionSummary {
  topic: string;
  seq: number;
  reactions: ReactionCount[];
}

export interface Reaction {
  emoji: string;
  user: number;
  created_at: number;
}

/** The reference a forwarded copy carries in content.forward. */
export interface ForwardOrigin {
  topic: string;
  seq: number;
  msg_id: number;
  from: number;
}

export interface Pin {
  seq: number;
  pinned_by: number;
  pinned_at: number;
}

/**
 * The content of an `image` message (PROTOCOL.md §4 "Image thumbnails"). `key` is the upload's;
 * `thumb_key`, `width` and `height` are the answer of `POST /api/v1/uploads/complete`, the same
 * shape: draw lists from `thumb_key`, fetch `key` when the image is opened.
 */
export interface ImageContent {
  key: string;
  thumb_key?: string;
  width?: number;
  height?: number;
  [member: string]: unknown;
}

export interface SendRequest {
  topic?: string;
  conversation_id?: number;
  to_user?: number;
  /** 1–64 chars; chosen by the SDK when missing and kept across resends. */
  client_msg_id?: string;
  msg_id?: number;
  /** Default "text". */
  type?: Message["type"];
  content: Record<string, unknown>;
  mentions?: number[];
  mention_all?: boolean;
  reply_seq?: number;
}

export interface SendAck {
  msg_id: number;
  seq: number;
  topic: string;
  conversation_id: number;
  client_msg_id: string;
  server_time: number;
}

export interface AuthData {
  user_id: number;
  tenant_id: string;
  device_id: number;
  server_time: number;
}

export interface Dialog {
  topic: string;
  conversation_id: number;
  score: number;
  last_seq: number;
  read_seq: number;
  unread: number;
  preview?: unknown;
  muted?: boolean;
  pinned?: boolean;
}

export interface ReadMark {
  topic: string;
  conversation_id: number;
  seq: number;
  msg_id: number;
}

/** Where the SDK keeps its catch-up cursors: localStorage fits. */
export interface Store {
  get(key: string): string | null;
  set(key: string, value: string): void;
}

export class MemoryStore implements Store {
  get(key: string): string | null;
  set(key: string, value: string): void;
}

export interface ClientOptions {
  /** wss://api.<domain>/ws */
  url: string;
  token: string;
  deviceId: number;
  platform?: string;
  /**
   * The live pushes this client reads, sent with AUTH: "presence" (the `presence` event),
   * "typing" (the `typing` event) and "receipt" (the `receipt` event). Default all three; []
   * asks for none.
   */
  subscribe?: Array<"presence" | "typing" | "receipt">;
  /** Default 30000. */
  heartbeatMs?: number;
  /** Default 15000. */
  requestTimeoutMs?: number;
  /** Reconnect backoff bounds, doubled per failed attempt with jitter. Defaults 500 and 30000. */
  backoffMinMs?: number;
  backoffMaxMs?: number;
  /** SYNC_MESSAGES page size, ≤ 200. */
  syncLimit?: number;
  /** Where the catch-up cursors live: localStorage, or any Store. Default: in memory (a reload starts afresh). */
  store?: Store | Pick<Storage, "getItem" | "setItem">;
  /**
   * The WebSocket constructor (the browser's API). Default: globalThis.WebSocket; a runtime
   * without one (Node 18) passes an implementation such as the ws package's `WebSocket`.
   * The constructor throws when there is none.
   */
  WebSocket?: new (url: string, protocols: string[]) => WebSocket;
}

export type State = "connecting" | "open" | "closed" | "kicked";

/** One user's presence (QUERY_PRESENCE entry, PRESENCE push). */
export interface Presence {
  user_id: number;
  /** "unknown": the server cannot tell right now (never a guess); ask again later. */
  state: "online" | "offline" | "unknown";
  /** Unix ms the user was last seen; absent when never seen or hidden. */
  last_seen?: number;
}

/** How typing names its conversation: exactly one field. */
export interface ConversationAddress {
  topic?: string;
  conversation_id?: number;
  to_user?: number;
}

/** A TYPING_NOTICE push: show "user_id is typing" until typing false, their message, or expires_in ms. */
export interface TypingNotice {
  topic: string;
  conversation_id: number;
  user_id: number;
  typing: boolean;
  expires_in?: number;
}

/** The user's settings (SETTINGS); later settings are new fields. */
export interface Settings {
  hide_presence: boolean;
  /** Your reads are pushed to nobody and counted in no READ_STATE; you still see others'. */
  hide_receipts: boolean;
}

/** A device's native push token (PUSH_TOKEN_SET); the server alerts it while none of the user's devices is connected. */
export interface PushToken {
  /** Your own name for the device, at most 64 bytes. */
  device_id: string;
  platform: "apns" | "fcm";
  /** The APNs bundle id or the FCM project. */
  app_id: string;
  token: string;
  locale?: string;
}

/** A RECEIPT push (P2P only): user_id read up to read_seq (✓✓ read), or a device of theirs got delivered_seq (✓✓); exactly one seq is set. */
export interface Receipt {
  topic: string;
  conversation_id: number;
  user_id: number;
  read_seq?: number;
  delivered_seq?: number;
}

/** READ_STATE: read of the of other members reached seq; readers (ascending) only up to receipts.group_limit members. */
export interface ReadState {
  topic: string;
  conversation_id: number;
  seq: number;
  read: number;
  of: number;
  readers?: number[];
  /** P2P only: every message of yours up to this seq reached a device of the peer (✓✓), also while you were away. */
  delivered_seq?: number;
}

export interface Events {
  state: State;
  message: Message;
  read: ReadMark;
  event: Record<string, unknown>;
  presence: Presence;
  typing: TypingNotice;
  receipt: Receipt;
  dialogs: Dialog[];
  kick: { reason: string };
  error: Error;
}

export class Client {
  constructor(opts: ClientOptions);
  readonly state: State;
  readonly identity: AuthData | null;
  on<K extends keyof Events>(name: K, fn: (value: Events[K]) => void): this;
  off<K extends keyof Events>(name: K, fn: (value: Events[K]) => void): this;
  /** Connects and authenticates; reconnects by itself afterwards until close(). */
  connect(): Promise<AuthData>;
  close(): void;
  /** Resolves once the server acknowledged (SEND_ACK); resent with the same client_msg_id after reconnects. */
  send(req: SendRequest): Promise<SendAck>;
  markRead(topic: string, seq: number): Promise<ReadMark>;
  /** Recalls an own message; resolves with it (status "recalled"). */
  recall(topic: string, seq: number): Promise<Message>;
  /** Edits an own message from the version last seen; a stale one rejects with Code.CONFLICT. */
  edit(topic: string, seq: number, content: Record<string, unknown>, version: number): Promise<Message>;
  /** One message as it is now (after an edit or recall event), or null when it is gone. */
  message(topic: string, seq: number): Promise<Message | null>;
  /** At most 200 ids (more: 40001); one entry per distinct id, in order. */
  presence(userIds: number[]): Promise<Presence[]>;
  /** A topic, or an address; typing defaults to true. 42901 past 10 per 10 s per device. */
  typing(conversation: string | ConversationAddress, typing?: boolean): Promise<{ expires_in: number }>;
  /** Only for a message the user sent (40301 otherwise); 40401 for an unknown seq. */
  readState(topic: string, seq: number): Promise<ReadState>;
  /** 40001 for a bad body (unknown field, other platform); replaces the device's last token. */
  setPushToken(token: PushToken): Promise<PushToken>;
  /** 40401 when the device has no token. */
  deletePushToken(deviceId: string): Promise<Record<string, never>>;
  /** Changes what change names; {} only reads. Resolves with every setting as stored. */
  settings(change?: Partial<Settings>): Promise<Settings>;
  /** Newest first. */
  history(topic: string, beforeSeq?: number, limit?: number): Promise<Message[]>;
  /** Ascending, every page. */
  syncMessages(topic: string, sinceSeq?: number): Promise<Message[]>;
  /** The whole conversation list. */
  dialogs(): Promise<Dialog[]>;
  /** Emoji at most 64 bytes; idempotent; any month. */
  addReaction(topic: string, seq: number, emoji: string): Promise<ReactionSummary>;
  removeReaction(topic: string, seq: number, emoji: string): Promise<ReactionSummary>;
  /** Oldest first, at most limit (default 200). */
  reactions(topic: string, seq: number, limit?: number): Promise<Reaction[]>;
  /** Newest first, after the change. */
  pin(topic: string, seq: number): Promise<Pin[]>;
  unpin(topic: string, seq: number): Promise<Pin[]>;
  pins(topic: string): Promise<Pin[]>;
  /** A copy with content.forward = ForwardOrigin; clientMsgId defaults to a random one. */
  forward(fromTopic: string, fromSeq: number, to: { topic: string } | { conversation_id: number } | { to_user: number }, clientMsgId?: string): Promise<SendAck>;
  request<T = unknown>(cmd: number, body?: object): Promise<T>;
  stream<T = unknown>(cmd: number, body?: object): Promise<{ pages: unknown[]; data: T }>;
}

export interface PresenceRefresherOptions {
  /** The wait before the first re-query of users answered "unknown" (default 2000 ms). */
  firstMs?: number;
  /** The longest wait; each round doubles the last up to it (default 30000 ms). */
  maxMs?: number;
  /** A clock for tests (default the global timers). */
  setTimeout?: (fn: () => void, ms: number) => unknown;
  clearTimeout?: (timer: unknown) => void;
}

/**
 * Opt-in: asks again after the users the server answered "unknown" (its presence registry
 * heals after a Redis loss), all of them together in queries of at most 200 ids, after 2 s,
 * 4 s, 8 s … up to 30 s, until an answer or a PRESENCE push tells their state. Every entry
 * it reads, the first answer's included, goes to onPresence; apply it as a push.
 *
 *   const watch = new PresenceRefresher(client, show);
 *   client.on("presence", show);
 *   await watch.query(idsOnScreen);
 */
export class PresenceRefresher {
  constructor(client: Pick<Client, "presence" | "on" | "off">, onPresence: (p: Presence) => void, opts?: PresenceRefresherOptions);
  /** Any number of ids, 200 a query; resolves with every entry (also given to onPresence). */
  query(userIds: number[]): Promise<Presence[]>;
  /** The users waiting to be asked again. */
  readonly pending: number[];
  /** Asks no more; the client stays as it is. */
  stop(): void;
}
