CREATE TABLE `run_artifacts` (
	`id` text PRIMARY KEY NOT NULL,
	`owner_id` text NOT NULL,
	`run_id` text NOT NULL,
	`tool_call_id` text,
	`kind` text NOT NULL,
	`name` text NOT NULL,
	`mime_type` text NOT NULL,
	`store_key` text NOT NULL,
	`bytes` integer NOT NULL,
	`width` integer,
	`height` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `run_artifacts_run_idx` ON `run_artifacts` (`run_id`,`kind`,`created_at`);--> statement-breakpoint
CREATE INDEX `run_artifacts_owner_idx` ON `run_artifacts` (`owner_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `run_artifacts_created_idx` ON `run_artifacts` (`created_at`);--> statement-breakpoint
CREATE TABLE `run_files` (
	`id` text PRIMARY KEY NOT NULL,
	`owner_id` text NOT NULL,
	`run_id` text NOT NULL,
	`name` text NOT NULL,
	`mime_type` text NOT NULL,
	`bytes` integer NOT NULL,
	`sha256` text NOT NULL,
	`store_key` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `run_files_run_idx` ON `run_files` (`run_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `run_files_created_idx` ON `run_files` (`created_at`);