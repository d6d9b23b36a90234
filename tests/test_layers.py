import json

from cockpit.core.layers import Evidence, Finding, Layer, Outcome, Stage, Status, Verdict, outcome_of


def test_layers_are_ordered_bottom_up():
    assert [layer.value for layer in sorted(Layer)] == ["config", "ssh", "host", "container", "process", "gpu", "app"]
    assert Layer.SSH < Layer.APP and not Layer.APP < Layer.SSH


def test_verdict_layer_is_first_failure_and_round_trips_json():
    v = Verdict("attempt")
    v.add(Stage("deploy", Status.OK, Layer.CONTAINER, "3 files"))
    v.add(Stage("launch", Status.FAIL, Layer.PROCESS, "never spawned", evidence=Evidence("sh -c x", 127, "not found")))
    v.add(Stage("verify", Status.FAIL, Layer.APP, "later failure"))
    v.not_reached([("progress", Layer.APP)])
    assert v.layer is Layer.PROCESS and not v.ok
    assert v.stages[-1].status is Status.NOT_REACHED
    d = json.loads(json.dumps(v.finish().to_dict()))
    assert d["layer"] == "process" and d["stages"][1]["evidence"]["exit_code"] == 127
    back = Verdict.from_dict(d)
    assert back.layer is Layer.PROCESS and [s.status for s in back.stages] == [s.status for s in v.stages]


def test_outcome_separates_failed_from_untested():
    def verdict(layer, name="x"):
        v = Verdict("attempt")
        v.add(Stage(name, Status.FAIL, layer, "boom"))
        return v

    assert outcome_of(verdict(Layer.APP)) is Outcome.FAILED
    for layer in (Layer.CONFIG, Layer.SSH, Layer.HOST, Layer.CONTAINER, Layer.PROCESS):
        assert outcome_of(verdict(layer)) is Outcome.UNTESTED, layer
    assert outcome_of(verdict(Layer.GPU, "launch")) is Outcome.UNTESTED
    assert outcome_of(verdict(Layer.GPU, "progress")) is Outcome.FAILED
    ok = Verdict("attempt")
    ok.add(Stage("progress", Status.OK, Layer.APP))
    assert outcome_of(ok) is Outcome.PASSED
    ok.add(Stage("healthy", Status.PENDING, Layer.APP))
    assert outcome_of(ok) is Outcome.PENDING  # not verified yet: neither passed nor failed


def test_finding_round_trip():
    f = Finding(Layer.CONTAINER, "zombie", "pid 9 is a zombie", "reboot", subject={"pid": 9})
    assert Finding.from_dict(json.loads(json.dumps(f.to_dict()))) == f
