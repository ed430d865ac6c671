CREATE TABLE `notice_delivery_history` (
	`id` bigint unsigned AUTO_INCREMENT NOT NULL,
	`source_name` varchar(64) NOT NULL,
	`app_code` varbinary(128) NOT NULL,
	`source_event_id` varbinary(764) NOT NULL,
	`channel` varchar(32) NOT NULL,
	`at_ms` bigint NOT NULL,
	`event` varchar(24) NOT NULL,
	`actor` varchar(191) NOT NULL,
	`error_code` varchar(32),
	`error_message` varchar(1024),
	`latency_ms` int,
	CONSTRAINT `notice_delivery_history_id` PRIMARY KEY(`id`)
);
--> statement-breakpoint
CREATE INDEX `idx_ndh_event` ON `notice_delivery_history` (`source_event_id`,`at_ms`);--> statement-breakpoint
CREATE INDEX `idx_ndh_at` ON `notice_delivery_history` (`at_ms`);