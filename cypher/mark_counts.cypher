// A multi-file load leaves the fan-out lists of all but its last file to that file's recount: until
// then the KG's counts are stale, and a load that finds every file complete recounts.
MERGE (k:KG {name: $kg})
SET k.counts_stale = $stale
