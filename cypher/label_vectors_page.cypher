// One page of a KG's labelled entities in IRI order after $after (a seek on the (kg, iri) constraint's
// index), with whether each still lacks its label vector: `kgqa index --vectors` resumes where it stopped.
MATCH (e:Entity {kg: $kg}) WHERE e.iri > $after AND e.label IS NOT NULL
RETURN e.iri AS e, e.label AS label, e.label_vector IS NULL AS missing
ORDER BY e.iri LIMIT $limit
