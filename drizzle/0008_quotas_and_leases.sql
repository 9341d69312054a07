CREATE TABLE `refusal_counts` (
	`code` text PRIMARY KEY NOT NULL,
	`count` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `runs` ADD `lease_expires_at` integer;--> statement-breakpoint
CREATE INDEX `runs_created_by_idx` ON `runs` (`created_by`,`created_at`);--> statement-breakpoint
CREATE INDEX `tool_calls_principal_idx` ON `tool_calls` (`principal_id`,`created_at`);