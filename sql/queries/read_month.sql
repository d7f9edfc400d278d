-- Month-table lookup by msg_id for READ_MESSAGE (seed 003 §14). Written against the template
-- im_group_messages_tpl, like month_messages.sql; the adapter sends it to one month table.

-- name: MessageByID :one
SELECT * FROM im_group_messages_tpl WHERE message_id = ?;
