DROP TABLE IF EXISTS t_daily_stats;
