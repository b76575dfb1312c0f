"""The input boundary: every file shardplan reads passes one reader (`boundary.read`) and one bounded parser
per format (`boundary.parse`), under the limits in `boundary.limits`.

Why a package of its own at the bottom of the dependency order: hardware profiles, model files, recipes,
launch scripts and cost tables are read by hardware/, constraints/, measure/ and solver/, and a limit that
holds in one reader but not another is no limit. Nothing here imports the rest of shardplan.
"""
