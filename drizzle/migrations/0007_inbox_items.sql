CREATE TABLE `notice_inbox_items` (
	`id` bigint unsigned AUTO_INCREMENT NOT NULL,
	`fact_hash` binary(32) NOT NULL,
	`app_code` varbinary(128) NOT NULL,
	`user_id` varbinary(256) NOT NULL,
	`source_name` varchar(64) NOT NULL,
	`source_event_id` varbinary(764) NOT NULL,
	`notice_kind` varchar(32) NOT NULL,
	`event_type` varchar(64) NOT NULL,
	`payload` mediumtext NOT NULL,
	`is_read` tinyint NOT NULL DEFAULT 0,
	`is_archived` tinyint NOT NULL DEFAULT 0,
	`created_at_ms` bigint NOT NULL,
	`read_at_ms` bigint,
	`archived_at_ms` bigint,
	`expire_at_ms` bigint,
	CONSTRAINT `notice_inbox_items_id` PRIMARY KEY(`id`),
	CONSTRAINT `uk_nii_fact` UNIQUE(`fact_hash`)
);
--> statement-breakpoint
CREATE INDEX `idx_nii_user` ON `notice_inbox_items` (`app_code`,`user_id`);--> statement-breakpoint
CREATE INDEX `idx_nii_list` ON `notice_inbox_items` (`app_code`,`user_id`,`is_archived`);--> statement-breakpoint
CREATE INDEX `idx_nii_unread` ON `notice_inbox_items` (`app_code`,`user_id`,`is_read`);--> statement-breakpoint
CREATE INDEX `idx_nii_kind` ON `notice_inbox_items` (`app_code`,`user_id`,`notice_kind`,`is_archived`);--> statement-breakpoint
CREATE INDEX `idx_nii_expire` ON `notice_inbox_items` (`expire_at_ms`);