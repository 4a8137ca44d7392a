// Constraints and indexes, created before the first write (every statement is idempotent).
// Facts are (:Entity)-[:FACT {relation, out_group, in_group}]->(:Entity). The group keys
// "<kg> <entity IRI> <relation IRI>" are indexed so one (s, r) or (o, r⁻¹) group is read by an index
// seek of exactly its size: a dynamic relationship type would make Neo4j 5.26 expand every
// relationship of a node (measured: 200,013 db hits to read 10 edges of a 200k-edge hub).
CREATE CONSTRAINT kgqa_kg IF NOT EXISTS FOR (k:KG) REQUIRE k.name IS UNIQUE;
CREATE CONSTRAINT kgqa_entity IF NOT EXISTS FOR (e:Entity) REQUIRE (e.kg, e.iri) IS UNIQUE;
CREATE CONSTRAINT kgqa_relation IF NOT EXISTS FOR (r:Relation) REQUIRE (r.kg, r.iri) IS UNIQUE;
CREATE CONSTRAINT kgqa_alias IF NOT EXISTS FOR (a:Alias) REQUIRE (a.kg, a.text) IS UNIQUE;
CREATE CONSTRAINT kgqa_load IF NOT EXISTS FOR (l:LoadRecord) REQUIRE (l.kg, l.source) IS UNIQUE;
CREATE INDEX kgqa_entity_label IF NOT EXISTS FOR (e:Entity) ON (e.kg, e.label);
CREATE INDEX kgqa_entity_key IF NOT EXISTS FOR (e:Entity) ON (e.kg, e.key);
CREATE INDEX kgqa_alias_key IF NOT EXISTS FOR (a:Alias) ON (a.kg, a.key);
CREATE INDEX kgqa_fact_out IF NOT EXISTS FOR ()-[f:FACT]-() ON (f.out_group);
CREATE INDEX kgqa_fact_in IF NOT EXISTS FOR ()-[f:FACT]-() ON (f.in_group);
// The entity linker's fallbacks (`Neo4jStore.search_labels`, search_labels.cypher): one full-text
// (Lucene) index over the normalised keys of entity labels and aliases. Keys are already lower-case,
// accent-free words separated by single spaces (kgqa.core.labels.normalise_label), so the whitespace
// analyzer indexes exactly those words (a language analyzer would drop stop words and stem; the
// standard one splits some scripts' words differently). Not eventually consistent: a batch's keys are
// searchable once its transaction commits. A KG loaded before this index existed gets it (populated
// from what is stored) the next time `kgqa load … --store bolt://…` opens the database.
CREATE FULLTEXT INDEX kgqa_label_keys IF NOT EXISTS FOR (n:Entity|Alias) ON EACH [n.key]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'whitespace', `fulltext.eventually_consistent`: false}};
