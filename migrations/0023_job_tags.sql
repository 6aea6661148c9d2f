-- Jobs are found by their metadata and args (issue 47; docs/storage.md#finding-a-job-by-what-it-carries-version-23).
--
-- One row per top-level job and key of its metadata or of its stages' args that holds a scalar
-- (`tags_of`), written by the enqueue in the same statement as the job and deleted with it. A
-- search is one range of `job_tags_pkey`, newest job first, so that a page of "the jobs of tenant
-- 42" costs the same among a million jobs as among a hundred. The rows are written once: a job's
-- transitions never touch them (an index on `jobs` itself, GIN or expression, would take a new
-- entry at every transition that cannot be a HOT update, which is nearly all of them, and a
-- bitmap of every match would be read before the newest could be chosen).
--
-- Name and value are cut to 120 and 200 characters, which keeps every key within a B-tree
-- page's limit; a search for a longer one finds its candidates by the cut text and checks them
-- against the whole (`tags_of`).
CREATE TABLE job_tags (
    name   text   NOT NULL,
    value  text   NOT NULL,
    job_id bigint NOT NULL,
    PRIMARY KEY (name, value, job_id)
);

-- The jobs already stored (as `tags_of` of version 23 names them).
INSERT INTO job_tags (name, value, job_id)
SELECT DISTINCT left(t.name, 120), left(t.value, 200), j.id
FROM jobs j CROSS JOIN LATERAL (
    SELECT 'metadata.' || m.key, m.value #>> '{}'
    FROM jsonb_each(CASE jsonb_typeof(j.metadata) WHEN 'object' THEN j.metadata END) m
    WHERE jsonb_typeof(m.value) IN ('string', 'number', 'boolean')
    UNION ALL
    SELECT 'args.' || a.key, a.value #>> '{}'
    FROM jsonb_path_query(j.chain, 'lax $[*].args ? (@.type() == "object")') s
    CROSS JOIN LATERAL jsonb_each(s) a
    WHERE jsonb_typeof(a.value) IN ('string', 'number', 'boolean')
    UNION ALL
    SELECT 'args.' || a.key, a.value #>> '{}'
    FROM jsonb_path_query(j.chain, 'lax $[*].group[*].args ? (@.type() == "object")') s
    CROSS JOIN LATERAL jsonb_each(s) a
    WHERE jsonb_typeof(a.value) IN ('string', 'number', 'boolean')
) t(name, value)
WHERE j.parent_id IS NULL;
