CREATE TABLE `notice_quiet_hours` (
	`app_code` varchar(32) NOT NULL,
	`user_id` varbinary(256) NOT NULL,
	`time_zone` varchar(64) NOT NULL,
	`windows` varchar(512) NOT NULL,
	`updated_at_ms` bigint NOT NULL,
	CONSTRAINT `pk_notice_quiet_hours` PRIMARY KEY(`app_code`,`user_id`)
);
