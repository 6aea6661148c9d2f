-- What a job is found by (`job_tags`; `GET /v1/jobs?metadata.tenant=42&args.customer=7`): each key
-- of its metadata, and of the args of any of its stages, group members or stages of a member's
-- sub-chain, whose value is a string, a number or a boolean, named `metadata.<key>` or
-- `args.<key>`, with the value's text (a string as it is, a number as it was written, `true` or
-- `false`). Objects, arrays and nulls are not found this way. A pair may come more than once (two
-- stages' args). `job_tags` keeps the first 120 characters of a name and the first 200 of a value;
-- a search for a longer one is checked against this function's whole text.
-- SQL without settings of its own, so that the planner inlines it into the statement that calls
-- it; no JSON path (each one a compiled path per call), only the elements and keys themselves.
CREATE OR REPLACE FUNCTION tags_of(p_chain jsonb, p_metadata jsonb) RETURNS TABLE (name text, value text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT 'metadata.' || m.key, m.value #>> '{}'
    FROM jsonb_each(CASE jsonb_typeof(p_metadata) WHEN 'object' THEN p_metadata END) m
    WHERE jsonb_typeof(m.value) IN ('string', 'number', 'boolean')
    UNION ALL
    SELECT 'args.' || a.key, a.value #>> '{}'
    FROM jsonb_array_elements(CASE jsonb_typeof(p_chain) WHEN 'array' THEN p_chain END) s
    CROSS JOIN LATERAL (
        SELECT s -> 'args'
        UNION ALL
        SELECT g -> 'args' FROM jsonb_array_elements(CASE jsonb_typeof(s -> 'group') WHEN 'array' THEN s -> 'group' END) g
        UNION ALL
        -- the stages of a member that is a sub-chain
        SELECT c -> 'args'
        FROM jsonb_array_elements(CASE jsonb_typeof(s -> 'group') WHEN 'array' THEN s -> 'group' END) g,
             jsonb_array_elements(CASE jsonb_typeof(g -> 'stages') WHEN 'array' THEN g -> 'stages' END) c
    ) x(args)
    CROSS JOIN LATERAL jsonb_each(CASE jsonb_typeof(x.args) WHEN 'object' THEN x.args END) a
    WHERE jsonb_typeof(a.value) IN ('string', 'number', 'boolean')
$$;
