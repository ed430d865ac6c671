CREATE TABLE `notice_rejected_messages` (
	`id` bigint unsigned AUTO_INCREMENT NOT NULL,
	`source_name` varchar(64) NOT NULL,
	`message_id` varchar(128) NOT NULL,
	`topic` varchar(255) NOT NULL,
	`tag` varchar(255),
	`message_keys` varchar(512),
	`delivery_attempt` int NOT NULL,
	`raw_body` mediumblob,
	`reason` varchar(1024) NOT NULL,
	`created_at_ms` bigint NOT NULL,
	CONSTRAINT `notice_rejected_messages_id` PRIMARY KEY(`id`),
	CONSTRAINT `uk_nrm_source_message` UNIQUE(`source_name`,`message_id`)
);
--> statement-breakpoint
CREATE INDEX `idx_nrm_created` ON `notice_rejected_messages` (`created_at_ms`);