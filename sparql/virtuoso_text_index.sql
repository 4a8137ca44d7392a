-- Loader only, over isql as a privileged user: Virtuoso's free-text index over a KG's labels and
-- deletion keys, which `SparqlEndpointStore.search_labels` queries with bif:contains: the literals of
-- its meta graph's {{labels}} and {{keys}} (k:labelWords and k:wordKeys for a KG loaded today;
-- k:normalisedLabel and k:labelKeys for one loaded before; `kgqa.sparql.virtuoso._INDEXED_BY_MARK`).
-- {{meta}}, {{labels}} and {{keys}} are IRIs checked to need no SQL quoting.
-- The rules come before any batch is loaded: the bulk loader then flags each such literal for the
-- index as it stores it, however short ("oz"). Adding one is idempotent (0: it was there). Where no
-- other rule covered these literals yet, Virtuoso first flags those already stored (a KG loaded by an
-- older kgqa; every string of a Virtuoso 7 database has its RDF_OBJ row, so short ones too); it adds
-- the rule only after that, so a load killed meanwhile does it again.
SELECT DB.DBA.RDF_OBJ_FT_RULE_ADD ('{{meta}}', '{{labels}}', 'kgqa');
SELECT DB.DBA.RDF_OBJ_FT_RULE_ADD ('{{meta}}', '{{keys}}', 'kgqa-keys');
-- Flagged literals wait in a queue that Virtuoso's scheduler indexes (a scheduled event every minute,
-- run at each SchedulerInterval): while kgqa writes, only the writer indexes them (at its checkpoints and
-- at the end), so the scheduler's run never overlaps the writer's. Two updates at once crashed Virtuoso
-- 7.2 (segfault in VT_INC_INDEX, three 50M-fact loads, 2026-11-28/29). The writer's close restores it
-- (VT_BATCH_UPDATE (…, 'ON', 1) adds the event again; 'ON', NULL leaves it, 'OFF' indexes at each insert).
DELETE FROM DB.DBA.SYS_SCHEDULED_EVENT WHERE SE_NAME = 'VT_INC_INDEX_DB_DBA_RDF_OBJ()';
DB.DBA.VT_INC_INDEX_DB_DBA_RDF_OBJ ();
