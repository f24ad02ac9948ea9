// Moved: every layer's migrations are listed in src/migrations.ts, beside the composition root,
// so that src/db does not depend on the layers above it. This re-export goes once the last
// importer (src/main.ts) imports src/migrations.ts instead.
export { allMigrations } from '../migrations.ts';
