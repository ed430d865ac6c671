CREATE TABLE `notice_digest_members` (
	`source_name` varchar(64) NOT NULL,
	`app_code` varbinary(128) NOT NULL,
	`source_event_id` varbinary(764) NOT NULL,
	`channel` varchar(32) NOT NULL,
	`user_id` varbinary(256) NOT NULL,
	`notice_kind` varchar(32) NOT NULL,
	`digest_key` varbinary(128) NOT NULL,
	`seq` bigint NOT NULL,
	`leads` tinyint NOT NULL DEFAULT 0,
	`created_at_ms` bigint NOT NULL,
	CONSTRAINT `pk_notice_digest_members` PRIMARY KEY(`source_name`,`app_code`,`source_event_id`,`channel`)
);
--> statement-breakpoint
CREATE TABLE `notice_digests` (
	`app_code` varbinary(128) NOT NULL,
	`user_id` varbinary(256) NOT NULL,
	`channel` varchar(32) NOT NULL,
	`notice_kind` varchar(32) NOT NULL,
	`digest_key` varbinary(128) NOT NULL,
	`seq` bigint NOT NULL,
	`state` varchar(8) NOT NULL,
	`opened_at_ms` bigint NOT NULL,
	`closes_at_ms` bigint NOT NULL,
	`leader_source_name` varchar(64),
	`leader_event_id` varbinary(764),
	`updated_at_ms` bigint NOT NULL,
	CONSTRAINT `pk_notice_digests` PRIMARY KEY(`app_code`,`user_id`,`channel`,`notice_kind`,`digest_key`)
);
--> statement-breakpoint
CREATE INDEX `idx_ndm_window` ON `notice_digest_members` (`app_code`,`user_id`,`channel`,`notice_kind`,`digest_key`,`seq`);