CREATE TABLE `notice_revocations` (
	`source_name` varchar(64) NOT NULL,
	`app_code` varbinary(128) NOT NULL,
	`source_event_id` varbinary(764) NOT NULL,
	`state` varchar(8) NOT NULL,
	`requested_by` varchar(128) NOT NULL,
	`requested_at_ms` bigint NOT NULL,
	`done_at_ms` bigint,
	`outcome` varchar(1024),
	CONSTRAINT `pk_notice_revocations` PRIMARY KEY(`source_name`,`app_code`,`source_event_id`)
);
--> statement-breakpoint
CREATE INDEX `idx_nrv_state` ON `notice_revocations` (`state`);