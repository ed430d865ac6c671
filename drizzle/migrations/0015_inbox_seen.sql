CREATE TABLE `notice_inbox_seen` (
	`app_code` varbinary(128) NOT NULL,
	`user_id` varbinary(256) NOT NULL,
	`seen_up_to_id` bigint unsigned NOT NULL,
	`updated_at_ms` bigint NOT NULL,
	CONSTRAINT `pk_notice_inbox_seen` PRIMARY KEY(`app_code`,`user_id`)
);
