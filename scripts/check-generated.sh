#!/usr/bin/env bash
# Regenerates generated/ and fails when the committed copy differs (or a handler stub
# had to be scaffolded), so the contract, the server and the SDK cannot drift apart.
set -euo pipefail
npm run --silent generate
changes=$(git status --porcelain -- generated server/handlers)
if [ -n "$changes" ]; then
  echo "$changes"
  git --no-pager diff --stat -- generated server/handlers
  echo "generated/ is stale or a handler is missing: run 'npm run generate' and commit the result." >&2
  exit 1
fi
echo "generated/ matches openapi.yaml and prisma/schema.prisma"
