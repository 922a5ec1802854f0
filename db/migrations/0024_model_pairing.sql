-- Model-provider pairing: a one-time token (stored as its SHA-256 only) that lets a tool holding a
-- provider key create one credential in the organization, on behalf of the member who started it.
CREATE TABLE "model_provider_pairings" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" uuid NOT NULL,
	"token_hash" text NOT NULL,
	"created_by" text NOT NULL,
	"api_key_id" text,
	"expires_at" timestamp with time zone NOT NULL,
	"consumed_at" timestamp with time zone,
	"credential_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "model_provider_pairings" ADD CONSTRAINT "model_provider_pairings_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "model_provider_pairings" ADD CONSTRAINT "model_provider_pairings_credential_id_model_provider_credentials_id_fk" FOREIGN KEY ("credential_id") REFERENCES "public"."model_provider_credentials"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "model_provider_pairings_token_hash_uq" ON "model_provider_pairings" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "model_provider_pairings_org_idx" ON "model_provider_pairings" USING btree ("org_id");
