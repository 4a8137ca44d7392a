// Explicitly given labels (a labels file, rdfs:label in RDF): shown before the id, resolvable.
UNWIND $aliases AS a
MERGE (e:Entity {kg: $kg, iri: a.iri})
ON CREATE SET e.out_rel = [], e.out_n = [], e.in_rel = [], e.in_n = []
MERGE (x:Alias {kg: $kg, text: a.text})
ON CREATE SET x.key = a.key
MERGE (x)-[:NAMES]->(e)
