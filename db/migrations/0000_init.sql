CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" uuid NOT NULL,
	"space_id" text NOT NULL,
	"created_by" text NOT NULL,
	"name" text NOT NULL,
	"key_hash" text NOT NULL,
	"key_prefix" text NOT NULL,
	"scopes" text[] NOT NULL,
	"expires_at" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "bootstrap_state" (
	"id" integer PRIMARY KEY NOT NULL,
	"user_id" text,
	"org_id" uuid,
	"redeemed_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "end_users" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" uuid NOT NULL,
	"space_id" text NOT NULL,
	"external_id" text NOT NULL,
	"name" text NOT NULL,
	"metadata" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "impersonation_log" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "impersonation_log_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"request_id" text NOT NULL,
	"org_id" uuid NOT NULL,
	"api_key_id" text NOT NULL,
	"end_user_id" text NOT NULL,
	"method" text NOT NULL,
	"path" text NOT NULL,
	"ip" text,
	"user_agent" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "invitations" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" uuid NOT NULL,
	"email" text NOT NULL,
	"role" text NOT NULL,
	"token_hash" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"invited_by" text,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "org_members" (
	"org_id" uuid NOT NULL,
	"user_id" text NOT NULL,
	"role" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "org_members_org_id_user_id_pk" PRIMARY KEY("org_id","user_id")
);
--> statement-breakpoint
CREATE TABLE "organizations" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"slug" text NOT NULL,
	"api_version" text,
	"deleting_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "password_resets" (
	"token_hash" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"token_hash" text NOT NULL,
	"user_id" text NOT NULL,
	"realm" text DEFAULT 'platform' NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"extended_at" timestamp with time zone DEFAULT now() NOT NULL,
	"ip" text,
	"user_agent" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "space_members" (
	"space_id" text NOT NULL,
	"user_id" text NOT NULL,
	"org_id" uuid NOT NULL,
	"role_key" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "space_members_space_id_user_id_pk" PRIMARY KEY("space_id","user_id")
);
--> statement-breakpoint
CREATE TABLE "space_roles" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" uuid NOT NULL,
	"key" text NOT NULL,
	"name" text NOT NULL,
	"permissions" text[] NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "spaces" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" uuid NOT NULL,
	"name" text NOT NULL,
	"kind" text DEFAULT 'team' NOT NULL,
	"owner_user_id" text,
	"is_default" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "users" (
	"id" text PRIMARY KEY NOT NULL,
	"email" text NOT NULL,
	"name" text NOT NULL,
	"password_hash" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "agent_configs" (
	"org_id" uuid NOT NULL,
	"space_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"locked_input" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"model_id" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "agent_configs_org_id_space_id_agent_id_pk" PRIMARY KEY("org_id","space_id","agent_id")
);
--> statement-breakpoint
CREATE TABLE "org_run_launches" (
	"org_id" uuid NOT NULL,
	"minute" bigint NOT NULL,
	"count" integer NOT NULL,
	"closed" boolean DEFAULT false NOT NULL,
	CONSTRAINT "org_run_launches_org_id_minute_pk" PRIMARY KEY("org_id","minute")
);
--> statement-breakpoint
CREATE TABLE "run_event_ids" (
	"run_id" text NOT NULL,
	"message_id" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "run_event_ids_run_id_message_id_pk" PRIMARY KEY("run_id","message_id")
);
--> statement-breakpoint
CREATE TABLE "run_logs" (
	"run_id" text NOT NULL,
	"sequence" integer NOT NULL,
	"level" text NOT NULL,
	"message" text NOT NULL,
	"data" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "run_logs_run_id_sequence_pk" PRIMARY KEY("run_id","sequence")
);
--> statement-breakpoint
CREATE TABLE "run_usage" (
	"run_id" text NOT NULL,
	"sequence" integer NOT NULL,
	"model" text NOT NULL,
	"prompt_tokens" integer NOT NULL,
	"completion_tokens" integer NOT NULL,
	"cost_usd" double precision DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "run_usage_run_id_sequence_pk" PRIMARY KEY("run_id","sequence")
);
--> statement-breakpoint
CREATE TABLE "runs" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" uuid NOT NULL,
	"space_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"agent_version" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"input" jsonb,
	"output" jsonb,
	"error" jsonb,
	"trigger_kind" text NOT NULL,
	"actor_user_id" text,
	"api_key_id" text,
	"end_user_id" text,
	"schedule_id" text,
	"rerun_of" text,
	"kind" text DEFAULT 'agent' NOT NULL,
	"model_id" text,
	"timeout_seconds" integer NOT NULL,
	"event_secret" text NOT NULL,
	"sink_expires_at" timestamp with time zone NOT NULL,
	"last_sequence" integer DEFAULT 0 NOT NULL,
	"last_event_at" timestamp with time zone,
	"prompt_tokens" bigint DEFAULT 0 NOT NULL,
	"completion_tokens" bigint DEFAULT 0 NOT NULL,
	"cost_usd" double precision DEFAULT 0 NOT NULL,
	"pending_output" jsonb,
	"inline_manifest" jsonb,
	"inline_prompt" text,
	"submitted_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"purged_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "package_blobs" (
	"org_id" uuid NOT NULL,
	"digest" text NOT NULL,
	"seq" integer NOT NULL,
	"data" "bytea" NOT NULL,
	CONSTRAINT "package_blobs_org_id_digest_seq_pk" PRIMARY KEY("org_id","digest","seq")
);
--> statement-breakpoint
CREATE TABLE "package_draft_files" (
	"org_id" uuid NOT NULL,
	"package_id" text NOT NULL,
	"path" text NOT NULL,
	"digest" text NOT NULL,
	"size" bigint NOT NULL,
	CONSTRAINT "package_draft_files_org_id_package_id_path_pk" PRIMARY KEY("org_id","package_id","path")
);
--> statement-breakpoint
CREATE TABLE "package_placements" (
	"org_id" uuid NOT NULL,
	"package_id" text NOT NULL,
	"space_id" text NOT NULL,
	"active" boolean DEFAULT true NOT NULL,
	"created_by" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "package_placements_org_id_package_id_space_id_pk" PRIMARY KEY("org_id","package_id","space_id")
);
--> statement-breakpoint
CREATE TABLE "package_version_files" (
	"org_id" uuid NOT NULL,
	"package_id" text NOT NULL,
	"version" text NOT NULL,
	"path" text NOT NULL,
	"digest" text NOT NULL,
	"size" bigint NOT NULL,
	CONSTRAINT "package_version_files_org_id_package_id_version_path_pk" PRIMARY KEY("org_id","package_id","version","path")
);
--> statement-breakpoint
CREATE TABLE "package_versions" (
	"org_id" uuid NOT NULL,
	"package_id" text NOT NULL,
	"version" text NOT NULL,
	"manifest" jsonb NOT NULL,
	"integrity" text NOT NULL,
	"archive_digest" text NOT NULL,
	"archive_size" bigint NOT NULL,
	"yanked" boolean DEFAULT false NOT NULL,
	"published_by" text,
	"published_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "package_versions_org_id_package_id_version_pk" PRIMARY KEY("org_id","package_id","version")
);
--> statement-breakpoint
CREATE TABLE "packages" (
	"org_id" uuid NOT NULL,
	"id" text NOT NULL,
	"type" text NOT NULL,
	"home_space_id" text NOT NULL,
	"created_by" text,
	"dist_tags" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"draft_base_version" text,
	"draft_detached" boolean DEFAULT false NOT NULL,
	"draft_integrity" text NOT NULL,
	"draft_updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"forked_from" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone,
	CONSTRAINT "packages_org_id_id_pk" PRIMARY KEY("org_id","id")
);
--> statement-breakpoint
CREATE TABLE "model_provider_credentials" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"name" text NOT NULL,
	"base_url" text NOT NULL,
	"api_key_sealed" text,
	"api_key_hint" text,
	"created_by" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "models" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" uuid NOT NULL,
	"credential_id" text NOT NULL,
	"model" text NOT NULL,
	"name" text NOT NULL,
	"is_default" boolean DEFAULT false NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"supports_temperature" boolean DEFAULT true NOT NULL,
	"reasoning_levels" text[] DEFAULT '{}'::text[] NOT NULL,
	"temperature" double precision,
	"reasoning_effort" text,
	"created_by" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_space_id_spaces_id_fk" FOREIGN KEY ("space_id") REFERENCES "public"."spaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_created_by_users_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "end_users" ADD CONSTRAINT "end_users_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "end_users" ADD CONSTRAINT "end_users_space_id_spaces_id_fk" FOREIGN KEY ("space_id") REFERENCES "public"."spaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "invitations" ADD CONSTRAINT "invitations_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "invitations" ADD CONSTRAINT "invitations_invited_by_users_id_fk" FOREIGN KEY ("invited_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "org_members" ADD CONSTRAINT "org_members_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "org_members" ADD CONSTRAINT "org_members_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "password_resets" ADD CONSTRAINT "password_resets_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "space_members" ADD CONSTRAINT "space_members_space_id_spaces_id_fk" FOREIGN KEY ("space_id") REFERENCES "public"."spaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "space_members" ADD CONSTRAINT "space_members_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "space_members" ADD CONSTRAINT "space_members_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "space_roles" ADD CONSTRAINT "space_roles_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "spaces" ADD CONSTRAINT "spaces_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "spaces" ADD CONSTRAINT "spaces_owner_user_id_users_id_fk" FOREIGN KEY ("owner_user_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "run_event_ids" ADD CONSTRAINT "run_event_ids_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "run_logs" ADD CONSTRAINT "run_logs_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "run_usage" ADD CONSTRAINT "run_usage_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "package_blobs" ADD CONSTRAINT "package_blobs_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "package_draft_files" ADD CONSTRAINT "package_draft_files_org_id_package_id_packages_org_id_id_fk" FOREIGN KEY ("org_id","package_id") REFERENCES "public"."packages"("org_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "package_placements" ADD CONSTRAINT "package_placements_space_id_spaces_id_fk" FOREIGN KEY ("space_id") REFERENCES "public"."spaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "package_placements" ADD CONSTRAINT "package_placements_org_id_package_id_packages_org_id_id_fk" FOREIGN KEY ("org_id","package_id") REFERENCES "public"."packages"("org_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "package_version_files" ADD CONSTRAINT "package_version_files_org_id_package_id_packages_org_id_id_fk" FOREIGN KEY ("org_id","package_id") REFERENCES "public"."packages"("org_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "package_versions" ADD CONSTRAINT "package_versions_org_id_package_id_packages_org_id_id_fk" FOREIGN KEY ("org_id","package_id") REFERENCES "public"."packages"("org_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "packages" ADD CONSTRAINT "packages_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "model_provider_credentials" ADD CONSTRAINT "model_provider_credentials_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "models" ADD CONSTRAINT "models_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "models" ADD CONSTRAINT "models_credential_id_model_provider_credentials_id_fk" FOREIGN KEY ("credential_id") REFERENCES "public"."model_provider_credentials"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_hash_uq" ON "api_keys" USING btree ("key_hash");--> statement-breakpoint
CREATE INDEX "api_keys_space_idx" ON "api_keys" USING btree ("org_id","space_id");--> statement-breakpoint
CREATE UNIQUE INDEX "end_users_external_uq" ON "end_users" USING btree ("space_id","external_id");--> statement-breakpoint
CREATE INDEX "end_users_space_idx" ON "end_users" USING btree ("org_id","space_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "invitations_token_uq" ON "invitations" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "invitations_org_idx" ON "invitations" USING btree ("org_id");--> statement-breakpoint
CREATE UNIQUE INDEX "invitations_pending_uq" ON "invitations" USING btree ("org_id",lower("email")) WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX "org_members_user_idx" ON "org_members" USING btree ("user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "organizations_slug_uq" ON "organizations" USING btree ("slug");--> statement-breakpoint
CREATE UNIQUE INDEX "sessions_token_uq" ON "sessions" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "sessions_user_idx" ON "sessions" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "space_members_org_user_idx" ON "space_members" USING btree ("org_id","user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "space_roles_key_uq" ON "space_roles" USING btree ("org_id","key");--> statement-breakpoint
CREATE INDEX "spaces_org_idx" ON "spaces" USING btree ("org_id");--> statement-breakpoint
CREATE UNIQUE INDEX "spaces_personal_uq" ON "spaces" USING btree ("org_id","owner_user_id") WHERE kind = 'personal';--> statement-breakpoint
CREATE UNIQUE INDEX "users_email_uq" ON "users" USING btree (lower("email"));--> statement-breakpoint
CREATE INDEX "runs_space_created_idx" ON "runs" USING btree ("org_id","space_id","created_at");--> statement-breakpoint
CREATE INDEX "runs_agent_idx" ON "runs" USING btree ("org_id","space_id","agent_id","created_at");--> statement-breakpoint
CREATE INDEX "runs_active_idx" ON "runs" USING btree ("org_id","status");--> statement-breakpoint
CREATE INDEX "runs_unsubmitted_idx" ON "runs" USING btree ("submitted_at","status");--> statement-breakpoint
CREATE INDEX "package_placements_space_idx" ON "package_placements" USING btree ("org_id","space_id");--> statement-breakpoint
CREATE INDEX "packages_home_idx" ON "packages" USING btree ("org_id","home_space_id");--> statement-breakpoint
CREATE INDEX "model_provider_credentials_org_idx" ON "model_provider_credentials" USING btree ("org_id");--> statement-breakpoint
CREATE INDEX "models_org_idx" ON "models" USING btree ("org_id");--> statement-breakpoint
CREATE UNIQUE INDEX "models_credential_model_uq" ON "models" USING btree ("credential_id","model");--> statement-breakpoint
CREATE UNIQUE INDEX "models_org_default_uq" ON "models" USING btree ("org_id") WHERE is_default;