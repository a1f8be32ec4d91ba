"""Results -> text for people (and the JSON text for machines): the presentation layer.

Every module renders values the pure layers computed and decides nothing; the same values always
render to the same text. One entry per module, imported strictly downward (no circle):
- `plan`: what `modelplane plan` prints, the fleet table and the pull-request comment;
- `changes`: a `PlacementDiff` (`plan --state`, `plan --what-if`);
- `cost`: a `FleetCost`, and the fleet's cost before -> after;
- `capacity`: what `modelplane capacity` suggests;
- `comment`: fitting a markdown report into one pull-request comment;
- `json_text`: the indented JSON `plan`, `capacity` and `--what-if` print;
- `text`: what they share, aligned columns and where a replica runs (`replica_text`, also the
  Pulumi program's `placement` output).
Importing this package imports none of them.
"""
