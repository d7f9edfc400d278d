DROP TABLE IF EXISTS t_reports;
ALTER TABLE t_users DROP COLUMN avatar;
DROP INDEX idx_conversation_muted ON t_conversation_members;
DROP INDEX idx_conversation_role ON t_conversation_members;
DROP INDEX idx_user_conversation ON t_conversation_members;
DROP INDEX idx_friend_big ON t_friendships;
DROP TABLE IF EXISTS t_friend_requests;
