-- Loader only, over isql as a privileged user: the fan-out counts per (e, r) and (e, r⁻¹) and the
-- facts per relation, in SQL on Virtuoso's quad table: what RdfWriter._recount writes for other stores,
-- about 8x faster than the same INSERT … SELECT in SPARQL (MetaQA: 0.44 s against 3.7 s). A COUNT(*) is
-- stored as an integer in the O column, which SPARQL reads as an xsd:integer literal.
-- {{fanout}}, {{fanin}}, {{meta}}, {{data}} are the KG's graph IRIs (checked to need no SQL quoting).
DELETE FROM DB.DBA.RDF_QUAD WHERE G = iri_to_id('{{fanout}}');
DELETE FROM DB.DBA.RDF_QUAD WHERE G = iri_to_id('{{fanin}}');
DELETE FROM DB.DBA.RDF_QUAD WHERE G = iri_to_id('{{meta}}') AND P = iri_to_id('urn:kgqa:vocab:factCount');
INSERT SOFT DB.DBA.RDF_QUAD (G, S, P, O)
  SELECT iri_to_id('{{fanout}}'), S, P, COUNT(*) FROM DB.DBA.RDF_QUAD WHERE G = iri_to_id('{{data}}') GROUP BY S, P;
INSERT SOFT DB.DBA.RDF_QUAD (G, S, P, O)
  SELECT iri_to_id('{{fanin}}'), O, P, COUNT(*) FROM DB.DBA.RDF_QUAD WHERE G = iri_to_id('{{data}}') GROUP BY O, P;
INSERT SOFT DB.DBA.RDF_QUAD (G, S, P, O)
  SELECT iri_to_id('{{meta}}'), P, iri_to_id('urn:kgqa:vocab:factCount'), COUNT(*) FROM DB.DBA.RDF_QUAD WHERE G = iri_to_id('{{data}}') GROUP BY P;
