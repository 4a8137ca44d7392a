// Live, from relationship degrees (O(1) per dense node), so it is right before a load finishes too.
MATCH (e:Entity {kg: $kg})
RETURN sum(COUNT { (e)-[:FACT]->() }) AS n
