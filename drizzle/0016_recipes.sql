CREATE TABLE `recipe_events` (
	`id` text PRIMARY KEY NOT NULL,
	`run_id` text NOT NULL,
	`step` integer,
	`kind` text NOT NULL,
	`summary` text NOT NULL,
	`tool_call_id` text,
	`evidence` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`run_id`) REFERENCES `runs`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `recipe_events_run_idx` ON `recipe_events` (`run_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `recipe_progress` (
	`run_id` text PRIMARY KEY NOT NULL,
	`next_step` integer DEFAULT 0 NOT NULL,
	`steps_begun` integer DEFAULT 0 NOT NULL,
	`calls` integer DEFAULT 0 NOT NULL,
	`started_at` integer NOT NULL,
	`ends_by` integer NOT NULL,
	`pending_call_id` text,
	`act_since` integer,
	`returned` integer DEFAULT false NOT NULL,
	`resumed_wait_id` text,
	`outcome` text,
	`driver_token` text,
	`driver_until` integer,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`run_id`) REFERENCES `runs`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `recipes` (
	`row_id` text PRIMARY KEY NOT NULL,
	`id` text NOT NULL,
	`version` integer NOT NULL,
	`enabled` integer NOT NULL,
	`reviewed_fixture` text NOT NULL,
	`origin` text NOT NULL,
	`phrases` text NOT NULL,
	`body` text NOT NULL,
	`hash` text NOT NULL,
	`created_by` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `recipes_id_version` ON `recipes` (`id`,`version`);--> statement-breakpoint
CREATE INDEX `recipes_origin_idx` ON `recipes` (`origin`);--> statement-breakpoint
ALTER TABLE `messages` ADD `fields` text;--> statement-breakpoint
ALTER TABLE `runs` ADD `recipe_id` text;--> statement-breakpoint
ALTER TABLE `runs` ADD `recipe_version` integer;--> statement-breakpoint
ALTER TABLE `runs` ADD `recipe_hash` text;