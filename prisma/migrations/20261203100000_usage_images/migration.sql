-- Issue 12: images a model drew (the Responses image_generation tool) are metered per image.
ALTER TABLE "usage_records" ADD COLUMN "images" INTEGER NOT NULL DEFAULT 0;
