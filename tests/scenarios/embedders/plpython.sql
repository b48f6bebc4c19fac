-- PostgreSQL's plpython3u for tests/embedders: two functions that record their backend's thread
-- and interpreter (truth.py, in the directory given) and park, one with the GIL released (in
-- open(2) on the release FIFO), one holding it (PL/Python keeps the GIL while plpy runs SQL).
CREATE EXTENSION plpython3u;

CREATE FUNCTION park_released(dir text) RETURNS int AS $$
import sys
sys.path.insert(0, dir)
import truth

def park_in_open():
    truth.record(dir + "/state", "park_in_open")
    truth.wait_for_release(dir + "/state")

park_in_open()
return 1
$$ LANGUAGE plpython3u;

CREATE FUNCTION park_holding(dir text) RETURNS int AS $$
import sys
sys.path.insert(0, dir)
import truth

def park_in_plpy():
    truth.record(dir + "/state", "park_in_plpy", gil=True, innermost="park_in_plpy", blocks_in=None)
    plpy.execute("SELECT pg_sleep(600)")

park_in_plpy()
return 1
$$ LANGUAGE plpython3u;
