CREATE TABLE `notice_delivery_events` (
	`source_name` varchar(64) NOT NULL,
	`app_code` varchar(32) NOT NULL,
	`source_event_id` varchar(191) NOT NULL,
	`channel` varchar(32) NOT NULL,
	`event_type` varchar(64) NOT NULL,
	`user_id` varchar(64) NOT NULL,
	`status` varchar(16) NOT NULL,
	`notice_kind` varchar(32) NOT NULL,
	`attempt_count` int NOT NULL DEFAULT 0,
	`claim_count` int NOT NULL DEFAULT 0,
	`locked_by` varchar(128),
	`lock_until_ms` bigint,
	`next_retry_at_ms` bigint,
	`last_error_code` varchar(32),
	`last_error` varchar(1024),
	`payload` mediumtext,
	`im_msg_key` varchar(128),
	`source_row_id` bigint unsigned,
	`source_created_at_ms` bigint,
	`created_at_ms` bigint NOT NULL,
	`updated_at_ms` bigint NOT NULL,
	`delivered_at_ms` bigint,
	CONSTRAINT `pk_notice_delivery_events` PRIMARY KEY(`source_name`,`app_code`,`source_event_id`,`channel`)
);
--> statement-breakpoint
CREATE TABLE `notice_ingest_cursors` (
	`source_name` varchar(64) NOT NULL,
	`high_water_id` bigint unsigned NOT NULL DEFAULT 0,
	`open_gaps` mediumtext NOT NULL,
	`lease_owner` varchar(128),
	`lease_until_ms` bigint NOT NULL DEFAULT 0,
	`updated_at_ms` bigint NOT NULL,
	CONSTRAINT `notice_ingest_cursors_source_name` PRIMARY KEY(`source_name`)
);
--> statement-breakpoint
CREATE INDEX `idx_nde_status_retry` ON `notice_delivery_events` (`status`,`next_retry_at_ms`);--> statement-breakpoint
CREATE INDEX `idx_nde_status_updated` ON `notice_delivery_events` (`status`,`updated_at_ms`);--> statement-breakpoint
CREATE INDEX `idx_nde_event_id` ON `notice_delivery_events` (`source_event_id`);--> statement-breakpoint
CREATE INDEX `idx_nde_user` ON `notice_delivery_events` (`user_id`,`created_at_ms`);