-- How many stages of `p_lane` may hold it at once: its own setting, else its longest prefix's
-- (`customer-*`), else 1. An index probe or two (`lane_settings` and its prefixes). For listings;
-- `lane_admissions` writes it out (keep the two alike).
CREATE OR REPLACE FUNCTION lane_width(p_lane text) RETURNS int
LANGUAGE sql STABLE SET search_path FROM CURRENT AS $$
    SELECT coalesce(
        (SELECT s.width FROM lane_settings s WHERE s.lane = p_lane),
        (SELECT s.width FROM lane_settings s
         WHERE right(s.lane, 1) = '*' AND starts_with(p_lane, left(s.lane, -1))
         ORDER BY length(s.lane) DESC LIMIT 1),
        1)
$$;
