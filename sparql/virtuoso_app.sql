-- Virtuoso only: the whole APP retrieval (KGFR §IV-C, eq. 6–7) as a stored procedure, so that a
-- retrieval is one SPARQL round trip (expand_app.rq calls it as sql:KGQA_APP_1) and no query text
-- is compiled per hop: on Virtuoso, compiling the per-hop queries' new texts was two thirds of a
-- retrieval's time. The loader installs it over isql (virtuoso.py), again when each load ends so
-- that its plans are made with the data there, and lets the SPARQL user execute it; it only reads.
-- The reader falls back to per-hop queries where it is missing.
--
-- Each lookup has graph, subject and relation bound (or graph and subject in a count graph, which
-- holds one quad per group), so no plan ever walks a hub's edges: a group over max(λ, |S_{h-1}|)
-- is probed with each entity reached before, as expand_members.rq does.
--
-- Result, one line per item, tab-separated: a header `kgqa-app 1`, then
--   N <iri>                          an IRI, numbered 0, 1, … in order of appearance
--   E <hop> <head#> <rel#> <inv> <tail#>
--   L <#> <label>   and   P <#> <preferred label>   (labels escaped: \\ \t \n)
-- or the header alone with ` too-large` once the text passes max_bytes (the reader then asks hop by
-- hop; Virtuoso refuses a string session over 10 MB, HT057). Past budget_ms it signals KGQAT:
-- a timeout is an error, never a short subgraph.
-- Topics come as one string of IRIs separated by single spaces (an IRI holds no space).
create procedure DB.DBA.KGQA_APP_1_NUM (inout nums any, inout ses any, inout written integer, in id any) returns integer
{
  declare k integer;
  declare line varchar;
  k := dict_get (nums, id, -1);
  if (k < 0)
    {
      k := dict_size (nums);
      dict_put (nums, id, k);
      line := concat ('N\t', id_to_iri (id), '\n');
      written := written + length (line);
      http (line, ses);
    }
  return k;
}
;
create procedure DB.DBA.KGQA_APP_1_CLOCK (in started integer, in budget_ms integer, in hop integer)
{
  if (msec_time () - started > budget_ms)
    signal ('KGQAT', sprintf ('kgqa APP retrieval stopped at hop %d after %d ms, its time limit', hop, budget_ms));
}
;
create procedure DB.DBA.KGQA_APP_1_EDGE (inout nums any, inout ses any, inout written integer, in hop integer,
  in head any, in rel any, in inverse integer, in tail any)
{
  declare line varchar;
  line := sprintf ('E\t%d\t%d\t%d\t%d\t%d\n', hop, DB.DBA.KGQA_APP_1_NUM (nums, ses, written, head),
    DB.DBA.KGQA_APP_1_NUM (nums, ses, written, rel), inverse, DB.DBA.KGQA_APP_1_NUM (nums, ses, written, tail));
  written := written + length (line);
  http (line, ses);
}
;
create procedure DB.DBA.KGQA_APP_1_LABEL (inout nums any, inout ses any, inout written integer, in kind varchar,
  in id any, in label_text any)
{
  declare line varchar;
  line := sprintf ('%s\t%d\t%s\n', kind, DB.DBA.KGQA_APP_1_NUM (nums, ses, written, id),
    replace (replace (replace (__ro2sq (label_text), '\\', '\\\\'), '\t', '\\t'), '\n', '\\n'));
  written := written + length (line);
  http (line, ses);
}
;
-- A row of a group read whole, with the tail's labels joined in (one row per label pair, so the
-- edge is written once per run of rows). Eq. 7: of a group over λ only the edges into S_{h-1} are
-- kept. The labels are written by the cursor that first reaches the tail (`labelled` holds its
-- number), wherever its rows fall in that cursor.
create procedure DB.DBA.KGQA_APP_1_ROW (inout nums any, inout ses any, inout written integer, inout labelled any,
  inout last any, inout reached any, inout fresh any, inout rels any, in cursor_no integer, in hop integer,
  in head any, in rel any, in inverse integer, in n integer, in lam integer, in tail any, in label_text any,
  in preferred_text any)
{
  declare first integer;
  if (n > lam and not dict_get (reached, tail, 0))
    return;
  if (last is null or last <> tail)
    {
      DB.DBA.KGQA_APP_1_EDGE (nums, ses, written, hop, head, rel, inverse, tail);
      dict_put (rels, rel, 1);
      if (not dict_get (reached, tail, 0))
        dict_put (fresh, tail, 1);
      last := tail;
    }
  first := dict_get (labelled, tail, 0);
  if (first = 0)
    {
      first := cursor_no;
      dict_put (labelled, tail, cursor_no);
    }
  if (first = cursor_no and label_text is not null)
    DB.DBA.KGQA_APP_1_LABEL (nums, ses, written, 'L', tail, label_text);
  if (first = cursor_no and preferred_text is not null)
    DB.DBA.KGQA_APP_1_LABEL (nums, ses, written, 'P', tail, preferred_text);
}
;
-- A group too large to read (over max(λ, |S_{h-1}|)): probed with each entity of S_{h-1}, as
-- expand_members.rq does; eq. 7 keeps exactly those edges of it.
create procedure DB.DBA.KGQA_APP_1_PROBE (inout nums any, inout ses any, inout written integer, inout rels any,
  in reached_list any, in g_data any, in started integer, in budget_ms integer, in hop integer, in ent any, in rel any,
  in inverse integer)
{
  declare j integer;
  declare nb, head, tail any;
  j := 0;
  while (j < length (reached_list))
    {
      nb := reached_list[j];
      if (mod (j, 256) = 255)
        DB.DBA.KGQA_APP_1_CLOCK (started, budget_ms, hop);
      head := either (inverse, nb, ent);
      tail := either (inverse, ent, nb);
      if (exists (select 1 from DB.DBA.RDF_QUAD where G = g_data and S = head and P = rel and O = tail))
        {
          DB.DBA.KGQA_APP_1_EDGE (nums, ses, written, hop, ent, rel, inverse, nb);
          dict_put (rels, rel, 1);
        }
      j := j + 1;
    }
}
;
-- It takes a KG's name, not graph IRIs: it reads only kgqa's graphs (namespace.py's KGNamespace),
-- so the SPARQL user cannot point it, running with its owner's rights, at a graph of someone else's.
create procedure DB.DBA.KGQA_APP_1 (in kg varchar, in topics varchar, in hops integer, in lam integer,
  in budget_ms integer, in max_bytes integer)
{
  declare g_data, g_out, g_in, g_meta, p_label, p_pref, reached, reached_list, frontier, fresh, rels, nums, labelled, ses, todo, ent, last any;
  declare h, i, inverse, scan_limit, pos, started, written, cursor_no integer;
  declare word varchar;
  started := msec_time ();
  written := 0;
  cursor_no := 0;
  g_data := iri_to_id (concat ('urn:kgqa:kg:', kg, ':data'), 0);
  g_out := iri_to_id (concat ('urn:kgqa:kg:', kg, ':fanout'), 0);
  g_in := iri_to_id (concat ('urn:kgqa:kg:', kg, ':fanin'), 0);
  g_meta := iri_to_id (concat ('urn:kgqa:kg:', kg, ':meta'), 0);
  p_label := iri_to_id ('http://www.w3.org/2000/01/rdf-schema#label', 0);
  p_pref := iri_to_id ('urn:kgqa:vocab:preferredLabel', 0);
  ses := string_output ();
  reached := dict_new (64);  -- S_{h-1}: every entity reached before the hop being expanded
  rels := dict_new (16);
  nums := dict_new (64);
  labelled := dict_new (64);
  while (length (topics) > 0)
    {
      pos := strchr (topics, ' ');
      if (pos is null) { word := topics; topics := ''; }
      else { word := subseq (topics, 0, pos); topics := subseq (topics, pos + 1); }
      ent := iri_to_id (word, 0);  -- NULL for an IRI the store has never seen: no edges, no label
      if (ent is not null)
        dict_put (reached, ent, 1);
    }
  frontier := dict_list_keys (reached, 0);
  h := 1;
  -- (foreach over an empty vector fails in Virtuoso 7, hence the index loops)
  while (h <= hops and length (frontier) > 0)
    {
      fresh := dict_new (64);
      reached_list := dict_list_keys (reached, 0);
      scan_limit := __max (lam, length (reached_list));
      i := 0;
      while (i < length (frontier))
        {
          DB.DBA.KGQA_APP_1_CLOCK (started, budget_ms, h);
          ent := frontier[i];
          -- its (ent, r) groups from the fan-out graph and (ent, r⁻¹) groups from the fan-in graph:
          -- eq. 7 keeps a group of at most λ edges whole, and of a larger one only the edges into
          -- S_{h-1}; one of at most max(λ, |S_{h-1}|) edges is read whole (and filtered)
          -- (one cursor per count graph: with `G IN (fan-out, fan-in)` Virtuoso walks a hub's data
          -- edges too; measured next to the 1M-edge hub: p50 41 ms against 4–6 ms)
          inverse := 0;
          while (inverse < 2)
            {
              for (select P as rel, O as n from DB.DBA.RDF_QUAD where G = either (inverse, g_in, g_out) and S = ent) do
                {
                  if (n > scan_limit)
                    DB.DBA.KGQA_APP_1_PROBE (nums, ses, written, rels, reached_list, g_data, started, budget_ms, h, ent, rel, inverse);
                  else
                    {
                      cursor_no := cursor_no + 1;
                      last := NULL;
                      if (inverse)
                        for (select Q.S as tail_in, L.O as label_in, F.O as preferred_in from DB.DBA.RDF_QUAD Q
                               left outer join DB.DBA.RDF_QUAD L on (L.G = g_meta and L.S = Q.S and L.P = p_label)
                               left outer join DB.DBA.RDF_QUAD F on (F.G = g_meta and F.S = Q.S and F.P = p_pref)
                             where Q.G = g_data and Q.O = ent and Q.P = rel) do
                          DB.DBA.KGQA_APP_1_ROW (nums, ses, written, labelled, last, reached, fresh, rels, cursor_no, h, ent, rel, 1, n, lam, tail_in, label_in, preferred_in);
                      else
                        for (select Q.O as tail_out, L.O as label_out, F.O as preferred_out from DB.DBA.RDF_QUAD Q
                               left outer join DB.DBA.RDF_QUAD L on (L.G = g_meta and L.S = Q.O and L.P = p_label)
                               left outer join DB.DBA.RDF_QUAD F on (F.G = g_meta and F.S = Q.O and F.P = p_pref)
                             where Q.G = g_data and Q.S = ent and Q.P = rel) do
                          DB.DBA.KGQA_APP_1_ROW (nums, ses, written, labelled, last, reached, fresh, rels, cursor_no, h, ent, rel, 0, n, lam, tail_out, label_out, preferred_out);
                    }
                  -- a group may pass max_bytes in the session; the text is never made from it then
                  if (written > max_bytes)
                    return 'kgqa-app 1 too-large';
                }
              inverse := inverse + 1;
            }
          i := i + 1;
        }
      -- eq. 6: the next hop expands the entities first reached at this one
      frontier := dict_list_keys (fresh, 1);
      i := 0;
      while (i < length (frontier))
        {
          dict_put (reached, frontier[i], 1);
          i := i + 1;
        }
      h := h + 1;
    }
  -- labels not joined in above: of the topics and of the relations kept
  todo := vector_concat (dict_list_keys (reached, 1), dict_list_keys (rels, 1));
  i := 0;
  while (i < length (todo))
    {
      ent := todo[i];
      if (dict_get (labelled, ent, 0) = 0)
        {
          for (select O as label_text from DB.DBA.RDF_QUAD where G = g_meta and S = ent and P = p_label) do
            DB.DBA.KGQA_APP_1_LABEL (nums, ses, written, 'L', ent, label_text);
          for (select O as preferred_text from DB.DBA.RDF_QUAD where G = g_meta and S = ent and P = p_pref) do
            DB.DBA.KGQA_APP_1_LABEL (nums, ses, written, 'P', ent, preferred_text);
          if (written > max_bytes)
            return 'kgqa-app 1 too-large';
        }
      i := i + 1;
    }
  return concat ('kgqa-app 1\n', string_output_string (ses));
}
;
grant execute on DB.DBA.KGQA_APP_1 to "SPARQL"
;
