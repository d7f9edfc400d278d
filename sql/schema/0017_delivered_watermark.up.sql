-- Delivered receipts after a reconnect (issue 31 part 3, docs/DESIGN.md §13 "Read receipts"):
-- how far a member's devices acknowledged the conversation's messages, raised by each PUSH_ACK
-- of a P2P message and never lowered, so a sender who was away learns from READ_STATE what
-- reached the peer meanwhile. One column beside the read watermark: no row per message.
ALTER TABLE t_conversation_members ADD COLUMN delivered_seq BIGINT NOT NULL DEFAULT 0;
