-- Each node's set of push token holders reads the tokens written since its last read every 30 s
-- (issue 32 part 1, docs/DESIGN.md issue-32 "Native push", "Only token holders pay for it"):
-- without an index on the time that read scans every token of the tenant. InnoDB appends the
-- primary key (user_id, device_id) to the entries, so the read's users come from the index.
ALTER TABLE t_push_tokens ADD KEY idx_updated (updated_at);
