from owlat.inuse import *  # noqa: F403  # moved to owlat.inuse (kernel); this re-export is for the API to drop
