from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Clip

pytestmark = pytest.mark.django_db


def run(*args):
    from io import StringIO

    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_folder_import_stores_good_videos_and_names_each_bad_file_with_its_reason(study, clip_files):
    out, err = run("import_clips", "--study", "s1", str(clip_files["a"].parent))
    assert set(Clip.objects.values_list("name", flat=True)) == {"a", "b", "c"}
    assert "notes.mp4" in err and "not a video" in err
    assert "truncated.mp4" in err
    assert "Imported 3 clip(s), skipped 2." in out
    assert "[5/5]" in out


def test_probed_facts_are_stored(study, clip_files):
    run("import_clips", "--study", "s1", str(clip_files["b"]))
    clip = Clip.objects.get(name="b")
    assert (clip.width, clip.height, clip.codec) == (160, 120, "h264")
    assert clip.duration == pytest.approx(6.0, abs=0.1)
    assert clip.fps == pytest.approx(25.0)
    assert len(clip.sha256) == 64


def test_same_video_twice_is_refused_as_a_duplicate(study, clip_files, tmp_path):
    copy = tmp_path / "a-copy.mp4"
    copy.write_bytes(clip_files["a"].read_bytes())
    run("import_clips", "--study", "s1", str(clip_files["a"]))
    with pytest.raises(CommandError, match="No clip was imported"):
        out, err = run("import_clips", "--study", "s1", str(copy))
    assert Clip.objects.count() == 1


def test_duplicate_is_reported_by_name(study, clip_files, tmp_path):
    copy = tmp_path / "a-copy.mp4"
    copy.write_bytes(clip_files["a"].read_bytes())
    out, err = run("import_clips", "--study", "s1", str(clip_files["a"]), str(copy), str(clip_files["b"]))
    assert "a-copy.mp4: the same video is already in the study as clip 'a'" in err


def test_properties_csv_is_applied_to_imported_clips(study, clip_files, tmp_path):
    csv = tmp_path / "clips.csv"
    csv.write_text(
        "clip,content_type,camera_platform,scene_complexity,shot_scale,motion_intensity,manipulated\n"
        "a,product_object,Tripod / static,low,close,unclear,no\n"
        "b,nature_outdoor,handheld,high,wide,high,yes\n"
    )
    run("import_clips", "--study", "s1", "--properties", str(csv), str(clip_files["a"]), str(clip_files["b"]))
    a, b = Clip.objects.get(name="a"), Clip.objects.get(name="b")
    assert (a.camera_platform, a.motion_intensity, a.manipulated) == ("tripod_static", "unclear", False)
    assert (b.content_type, b.manipulated) == ("nature_outdoor", True)


def test_bad_properties_csv_imports_nothing(study, clip_files, tmp_path):
    csv = tmp_path / "clips.csv"
    csv.write_text("clip,scene_complexity\na,enormous\n")
    with pytest.raises(CommandError, match="enormous"):
        run("import_clips", "--study", "s1", "--properties", str(csv), str(clip_files["a"]))
    assert Clip.objects.count() == 0


def test_unknown_study_is_named(db, clip_files):
    with pytest.raises(CommandError, match="No study 'nope'"):
        run("import_clips", "--study", "nope", str(clip_files["a"]))


def test_missing_path_is_named(study, tmp_path):
    with pytest.raises(CommandError, match="No such file or folder"):
        run("import_clips", "--study", "s1", str(tmp_path / "gone.mp4"))


def test_media_job_makes_a_proxy_only_for_a_video_browsers_cannot_play(
    study, clip_files, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        run("import_clips", "--study", "s1", str(clip_files["a"]), str(clip_files["c"]))
    playable, avi = Clip.objects.get(name="a"), Clip.objects.get(name="c")
    assert not playable.proxy and playable.poster
    assert avi.proxy and avi.poster
    from annotation.media import video as media

    proxy = media.probe(avi.proxy.path)
    assert (proxy.codec, proxy.pix_fmt, proxy.has_audio) == ("h264", "yuv420p", False)


def test_the_import_media_job_stores_shot_changes_at_the_set_threshold(
    study, tmp_path, settings, django_capture_on_commit_callbacks
):
    import subprocess

    cuts = tmp_path / "cuts.mp4"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y",
         "-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=2",
         "-f", "lavfi", "-i", "color=c=blue:s=160x120:r=25:d=1.6",
         "-f", "lavfi", "-i", "mandelbrot=s=160x120:r=25",
         "-filter_complex", "[2:v]trim=end_frame=40[m];[0:v][1:v][m]concat=n=3:v=1[v]",
         "-map", "[v]", "-c:v", "libx264", "-pix_fmt", "yuv420p", str(cuts)],
        check=True,
    )  # fmt: skip
    settings.SHOT_CHANGE_THRESHOLD = 0.99
    with django_capture_on_commit_callbacks(execute=True):
        run("import_clips", "--study", "s1", str(cuts))
    assert Clip.objects.get(name="cuts").shot_changes == [3.6]


def test_clips_imported_before_shot_detection_get_it_from_the_recovery(
    study, clip_files, django_capture_on_commit_callbacks
):
    from annotation.services.clips import clips_media_recover

    with django_capture_on_commit_callbacks(execute=True):
        run("import_clips", "--study", "s1", str(clip_files["a"]))
    Clip.objects.update(shot_changes=None)
    with django_capture_on_commit_callbacks(execute=True):
        assert clips_media_recover(older_than_seconds=-60) == [Clip.objects.get().pk]
    assert Clip.objects.get().shot_changes == []


def test_every_video_the_import_serves_is_faststart(study, clip_files, tmp_path, django_capture_on_commit_callbacks):
    """A playable mp4 written without faststart gets a copy with its index in front (the same
    frames, not re-encoded), a video browsers cannot play a proxy: the first range request's bytes
    hold the index and the first frame of whichever file is served."""
    import subprocess

    from annotation.media import video as media

    slow = tmp_path / "slow.mp4"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=3",
                    "-c:v", "libx264", "-pix_fmt", "yuv420p", str(slow)], check=True)
    assert not media.is_faststart(slow)
    with django_capture_on_commit_callbacks(execute=True):
        run("import_clips", "--study", "s1", str(clip_files["a"]), str(clip_files["c"]), str(slow))
    clips = {clip.name: clip for clip in Clip.objects.all()}
    assert {name: media.is_faststart(clip.playable.path) for name, clip in clips.items()} == {
        "a": True, "c": True, "slow": True}
    assert not clips["a"].proxy, "a faststart original is served as it is"
    original, served = media.probe(slow), media.probe(clips["slow"].playable.path)
    assert (served.codec, served.pix_fmt, served.width, served.height) == ("h264", "yuv420p", 160, 120)
    assert served.duration == pytest.approx(original.duration, abs=0.05)

    def frames(path):
        """Each video packet's timestamp and size: equal for a copy that was not re-encoded."""
        return subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                               "packet=pts_time,size", "-of", "csv=p=0", str(path)],
                              capture_output=True, text=True, check=True).stdout

    assert frames(clips["slow"].playable.path) == frames(slow)


def test_a_media_job_stopped_before_storing_its_files_names_leaves_no_file_behind_when_run_again(
    study, clip_files, tmp_path, media_root, django_capture_on_commit_callbacks
):
    """A worker killed, or a database gone, between writing a clip's proxy and poster and storing
    their names: the job's next run takes over those files (no second copy, no file without a row)."""
    import os
    import subprocess
    import time

    from annotation.media.storage import media_check
    from annotation.services.clips import clip_prepare_media

    slow = tmp_path / "slow.mp4"  # not faststart: it gets a proxy (a faststart copy)
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=1",
                    "-c:v", "libx264", "-pix_fmt", "yuv420p", str(slow)], check=True)
    with django_capture_on_commit_callbacks(execute=True):
        run("import_clips", "--study", "s1", str(slow), str(clip_files["c"]))
    first = {clip.pk: (clip.proxy.name, clip.poster.name) for clip in Clip.objects.all()}
    assert all(proxy and poster for proxy, poster in first.values())
    Clip.objects.update(proxy="", poster="")  # the names were never stored

    for clip_id in first:
        clip_prepare_media(clip_id=clip_id)
    assert {clip.pk: (clip.proxy.name, clip.poster.name) for clip in Clip.objects.all()} == first
    past = time.time() - 600
    for path in Path(media_root).rglob("*"):
        os.utime(path, (past, past))
    report = media_check()
    assert (report.orphans, report.missing) == ([], [])
