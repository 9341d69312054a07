CREATE TABLE `artifacts` (
	`id` text PRIMARY KEY NOT NULL,
	`owner_id` text NOT NULL,
	`run_id` text NOT NULL,
	`tool_call_id` text NOT NULL,
	`kind` text NOT NULL,
	`store_key` text NOT NULL,
	`bytes` integer NOT NULL,
	`width` integer NOT NULL,
	`height` integer NOT NULL,
	`box` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `artifacts_call_kind_idx` ON `artifacts` (`tool_call_id`,`kind`);--> statement-breakpoint
CREATE INDEX `artifacts_owner_idx` ON `artifacts` (`owner_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `artifacts_created_idx` ON `artifacts` (`created_at`);