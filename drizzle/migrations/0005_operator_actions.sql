CREATE TABLE `notice_operator_actions` (
	`id` bigint unsigned AUTO_INCREMENT NOT NULL,
	`at_ms` bigint NOT NULL,
	`actor` varchar(191) NOT NULL,
	`via` varchar(16) NOT NULL,
	`action` varchar(32) NOT NULL,
	`matched` int NOT NULL,
	`affected` int NOT NULL,
	`detail` mediumtext NOT NULL,
	CONSTRAINT `notice_operator_actions_id` PRIMARY KEY(`id`)
);
--> statement-breakpoint
CREATE INDEX `idx_noa_at` ON `notice_operator_actions` (`at_ms`);