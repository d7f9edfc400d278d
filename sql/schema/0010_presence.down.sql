DROP TABLE IF EXISTS t_user_settings;
DROP TABLE IF EXISTS t_user_last_seen;
