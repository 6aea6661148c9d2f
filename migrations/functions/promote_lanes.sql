-- Admit to each lane the waiting jobs it has room for (`lane_admissions`), each with its row in
-- `lane_holds`. Call with the lanes locked. Returns the jobs made available.
CREATE OR REPLACE FUNCTION promote_lanes(p_lanes text[]) RETURNS TABLE (id bigint, queue text)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY
    WITH moved AS (
        UPDATE jobs j SET state = 'available', run_at = now(), lane_slot = a.slot
        FROM lane_admissions(p_lanes) a
        WHERE j.id = a.id
        RETURNING j.id, j.queue, j.lane, j.lane_slot
    ), held AS (
        INSERT INTO lane_holds (part, lane, lane_slot, job_id)
        SELECT ready_slot(), m.lane, m.lane_slot, m.id FROM moved m
    )
    SELECT m.id, m.queue FROM moved m;
END $$;
