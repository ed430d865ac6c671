ALTER TABLE `notice_delivery_events` ADD `supersede_key` varbinary(32);--> statement-breakpoint
ALTER TABLE `notice_delivery_events` ADD `supersede_version` bigint;--> statement-breakpoint
ALTER TABLE `notice_delivery_events` ADD `superseded_by` varbinary(764);--> statement-breakpoint
CREATE INDEX `idx_nde_supersede` ON `notice_delivery_events` (`supersede_key`,`supersede_version`);