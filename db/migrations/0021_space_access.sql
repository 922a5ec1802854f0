-- Team spaces may be visible to the whole organization (members join them with default_role);
-- any space may restrict copying (forking) its packages out to holders of the package type's
-- write permission there.
ALTER TABLE "spaces" ADD COLUMN "visibility" text DEFAULT 'private' NOT NULL;--> statement-breakpoint
ALTER TABLE "spaces" ADD COLUMN "default_role" text DEFAULT 'viewer' NOT NULL;--> statement-breakpoint
ALTER TABLE "spaces" ADD COLUMN "package_copy" text DEFAULT 'members' NOT NULL;--> statement-breakpoint
ALTER TABLE "spaces" ADD CONSTRAINT "spaces_visibility_ck" CHECK ("visibility" IN ('private', 'org') AND ("kind" = 'team' OR "visibility" = 'private'));--> statement-breakpoint
ALTER TABLE "spaces" ADD CONSTRAINT "spaces_package_copy_ck" CHECK ("package_copy" IN ('members', 'restricted'));--> statement-breakpoint
CREATE INDEX "spaces_org_visible_idx" ON "spaces" ("org_id") WHERE "visibility" = 'org';
