CREATE TABLE "integration_connections" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL REFERENCES "organizations"("id") ON DELETE cascade,
	"space_id" text NOT NULL REFERENCES "spaces"("id") ON DELETE cascade,
	"integration_package_id" text NOT NULL,
	"auth_key" text NOT NULL,
	"owner_user_id" text NOT NULL,
	"owner_end_user_id" text REFERENCES "end_users"("id") ON DELETE cascade,
	"account_id" text NOT NULL,
	"label" text NOT NULL,
	"credentials" text NOT NULL,
	"granted_scopes" text[] DEFAULT '{}' NOT NULL,
	"token_expires_at" timestamp with time zone,
	"needs_reconnection" boolean DEFAULT false NOT NULL,
	"shared_with_org" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "integration_connections_label_uq" ON "integration_connections" USING btree ("org_id","space_id","integration_package_id","owner_user_id",COALESCE("owner_end_user_id", ''),"label");
--> statement-breakpoint
CREATE INDEX "integration_connections_space_idx" ON "integration_connections" USING btree ("org_id","space_id","integration_package_id");
--> statement-breakpoint
CREATE TABLE "integration_connect_sessions" (
	"token_hash" text PRIMARY KEY NOT NULL,
	"org_id" uuid NOT NULL REFERENCES "organizations"("id") ON DELETE cascade,
	"space_id" text NOT NULL REFERENCES "spaces"("id") ON DELETE cascade,
	"integration_package_id" text NOT NULL,
	"auth_key" text NOT NULL,
	"owner_user_id" text NOT NULL,
	"owner_end_user_id" text REFERENCES "end_users"("id") ON DELETE cascade,
	"connection_id" uuid,
	"scopes" text[] DEFAULT '{}' NOT NULL,
	"oauth_state" text,
	"oauth_verifier" text,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "integration_connect_sessions_state_uq" ON "integration_connect_sessions" USING btree ("oauth_state");
--> statement-breakpoint
CREATE INDEX "integration_connect_sessions_expiry_idx" ON "integration_connect_sessions" USING btree ("expires_at");
--> statement-breakpoint
CREATE TABLE "integration_settings" (
	"org_id" uuid NOT NULL REFERENCES "organizations"("id") ON DELETE cascade,
	"integration_package_id" text NOT NULL,
	"personal_connections_disabled" boolean DEFAULT false NOT NULL,
	"default_connection_id" uuid REFERENCES "integration_connections"("id") ON DELETE set null,
	"enforce_default" boolean DEFAULT false NOT NULL,
	"oauth_clients" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	PRIMARY KEY ("org_id","integration_package_id")
);
--> statement-breakpoint
CREATE TABLE "integration_connection_pins" (
	"org_id" uuid NOT NULL REFERENCES "organizations"("id") ON DELETE cascade,
	"space_id" text NOT NULL REFERENCES "spaces"("id") ON DELETE cascade,
	"agent_id" text NOT NULL,
	"integration_package_id" text NOT NULL,
	"connection_id" uuid NOT NULL REFERENCES "integration_connections"("id") ON DELETE cascade,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	PRIMARY KEY ("org_id","space_id","agent_id","integration_package_id")
);
--> statement-breakpoint
CREATE INDEX "integration_connection_pins_connection_idx" ON "integration_connection_pins" USING btree ("connection_id");
--> statement-breakpoint
CREATE TABLE "run_connections" (
	"run_id" text NOT NULL REFERENCES "runs"("id") ON DELETE cascade,
	"org_id" uuid NOT NULL,
	"integration_package_id" text NOT NULL,
	"integration_version" text NOT NULL,
	"auth_key" text NOT NULL,
	"connection_id" uuid NOT NULL,
	PRIMARY KEY ("run_id","integration_package_id")
);
