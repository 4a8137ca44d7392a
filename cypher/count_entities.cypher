MATCH (e:Entity {kg: $kg}) RETURN count(e) AS n
