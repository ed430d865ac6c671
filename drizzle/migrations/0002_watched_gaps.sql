CREATE TABLE `notice_ingest_watched_gaps` (
	`source_name` varchar(64) NOT NULL,
	`from_id` bigint unsigned NOT NULL,
	`to_id` bigint unsigned NOT NULL,
	`ranges` mediumtext NOT NULL,
	`hole_ids` bigint NOT NULL,
	`first_seen_ms` bigint NOT NULL,
	`next_check_at_ms` bigint NOT NULL,
	`checks` int NOT NULL DEFAULT 0,
	CONSTRAINT `pk_notice_ingest_watched_gaps` PRIMARY KEY(`source_name`,`from_id`)
);
--> statement-breakpoint
CREATE INDEX `idx_niwg_due` ON `notice_ingest_watched_gaps` (`source_name`,`next_check_at_ms`);