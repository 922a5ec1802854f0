CREATE TABLE "oauth_clients" (
	"id" text PRIMARY KEY NOT NULL,
	"level" text NOT NULL,
	"org_id" uuid,
	"space_id" text,
	"name" text NOT NULL,
	"redirect_uris" text[] DEFAULT '{}' NOT NULL,
	"post_logout_redirect_uris" text[] DEFAULT '{}' NOT NULL,
	"grant_types" text[] NOT NULL,
	"token_endpoint_auth_method" text NOT NULL,
	"secret_sealed" text,
	"scopes" text[] NOT NULL,
	"allow_signup" boolean DEFAULT false NOT NULL,
	"registration" text NOT NULL,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_by" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "oauth_clients_level_check" CHECK ("level" IN ('instance', 'org', 'space')),
	CONSTRAINT "oauth_clients_registration_check" CHECK ("registration" IN ('api', 'dynamic', 'metadata_document')),
	CONSTRAINT "oauth_clients_binding_check" CHECK (("level" = 'instance' AND "org_id" IS NULL AND "space_id" IS NULL) OR ("level" = 'org' AND "org_id" IS NOT NULL AND "space_id" IS NULL) OR ("level" = 'space' AND "org_id" IS NOT NULL AND "space_id" IS NOT NULL))
);
--> statement-breakpoint
ALTER TABLE "oauth_clients" ADD CONSTRAINT "oauth_clients_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_clients" ADD CONSTRAINT "oauth_clients_space_id_spaces_id_fk" FOREIGN KEY ("space_id") REFERENCES "public"."spaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_clients" ADD CONSTRAINT "oauth_clients_created_by_users_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "oauth_clients_org_idx" ON "oauth_clients" USING btree ("org_id","space_id","id" COLLATE "C");--> statement-breakpoint
CREATE TABLE "oidc_payloads" (
	"model" text NOT NULL,
	"id" text NOT NULL,
	"payload" jsonb NOT NULL,
	"grant_id" text,
	"user_code" text,
	"uid" text,
	"account_id" text,
	"expires_at" timestamp with time zone,
	"consumed_at" timestamp with time zone,
	CONSTRAINT "oidc_payloads_pk" PRIMARY KEY ("model","id")
);
--> statement-breakpoint
CREATE INDEX "oidc_payloads_grant_idx" ON "oidc_payloads" USING btree ("grant_id") WHERE "grant_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "oidc_payloads_user_code_idx" ON "oidc_payloads" USING btree ("user_code") WHERE "user_code" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "oidc_payloads_uid_idx" ON "oidc_payloads" USING btree ("uid") WHERE "uid" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "oidc_payloads_account_idx" ON "oidc_payloads" USING btree ("account_id") WHERE "account_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "oidc_payloads_expires_idx" ON "oidc_payloads" USING btree ("expires_at");--> statement-breakpoint
CREATE TABLE "oidc_signing_keys" (
	"kid" text PRIMARY KEY NOT NULL,
	"alg" text DEFAULT 'ES256' NOT NULL,
	"private_jwk_sealed" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"retired_at" timestamp with time zone
);
