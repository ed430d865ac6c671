CREATE TABLE `notice_preferences` (
	`app_code` varchar(32) NOT NULL,
	`user_id` varbinary(256) NOT NULL,
	`notice_kind` varchar(32) NOT NULL,
	`channel` varchar(32) NOT NULL,
	`enabled` tinyint NOT NULL,
	`updated_at_ms` bigint NOT NULL,
	CONSTRAINT `pk_notice_preferences` PRIMARY KEY(`app_code`,`user_id`,`notice_kind`,`channel`)
);
