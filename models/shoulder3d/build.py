"""Build the project's 3D shoulder model (seed section 4-4 C) as ``shoulder3d.osim``.

Run from the repository root:  python models/shoulder3d/build.py [path/to/mobl_arms_holzbaur.osim]

What the model is made of, and where each part comes from (see README.md):

* Skeleton and joints -- the Holzbaur et al. (2005) shoulder as distributed in the MoBL-ARMS model
  (Saul et al. 2015): thorax (fixed), clavicle, scapula, humerus, with the phantom bodies that make the
  humerus angles thorax-relative; generalized coordinates elv_angle (plane of elevation),
  shoulder_elv (elevation), shoulder_rot (axial rotation).
* Shoulder rhythm -- de Groot & Brand (2001): the clavicle and scapula angles are linear functions of
  both elv_angle and shoulder_elv (rhythm ``degroot2001`` of osim_emb.rhythm.rhythms), written as
  two-coordinate LinearFunction couplers.
* Inertial parameters -- humerus: de Leva (1996), adult male of 75 kg (mass 2.71 % of body mass,
  centre of mass 57.72 % of the segment length from the shoulder, radii of gyration 28.5 / 15.8 / 26.9 %
  about the sagittal / longitudinal / transverse axes, segment length 0.2817 m); clavicle and scapula:
  the Delft shoulder model (van der Helm 1994) as reported in MoBL-ARMS.  The seed used Quental et al.
  (2012), whose values are not reproduced here.
* Musculotendon units -- the 14 units of the seed (DELT1-3, SUPSP, INFSP, SUBSC, TMAJ, TMIN, PECM1-3,
  LAT1-3) with Holzbaur's paths, moving via points and wrap objects, and his architecture (F_max,
  optimal fibre length, tendon slack length, pennation), as Thelen2003 muscles with OpenSim's default
  Thelen parameters (max contraction velocity 10 l_opt/s), so that OpenSim's StaticOptimization can
  run on the exported file.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import numpy as np
from lxml import etree

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from osim_emb.io.osim_reader import read_osim  # noqa: E402
from osim_emb.io.osim_writer import write_osim  # noqa: E402
from osim_emb.rhythm.rhythms import apply_to_document, builtin_rhythm  # noqa: E402

BODIES = ["thorax", "clavicle", "clavphant", "scapula", "scapphant", "humphant", "humphant1", "humerus"]
MUSCLES = ["DELT1", "DELT2", "DELT3", "SUPSP", "INFSP", "SUBSC", "TMAJ", "TMIN", "PECM1", "PECM2", "PECM3",
           "LAT1", "LAT2", "LAT3"]
BODY_MASS = 75.0
HUMERUS_LENGTH = 0.2817  # de Leva (1996), male upper arm


def de_leva_humerus(com_direction: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass, centre of mass and inertia (about the centre of mass) of the male upper arm (de Leva 1996)."""
    m = 0.0271 * BODY_MASS
    com = 0.5772 * HUMERUS_LENGTH * com_direction
    r_sag, r_long, r_trans = 0.285, 0.158, 0.269
    # body frame of the humerus: y along the shaft (longitudinal), x anterior (transverse), z lateral (sagittal)
    ixx = m * (r_trans * HUMERUS_LENGTH) ** 2
    iyy = m * (r_long * HUMERUS_LENGTH) ** 2
    izz = m * (r_sag * HUMERUS_LENGTH) ** 2
    return m, com, np.array([ixx, iyy, izz, 0.0, 0.0, 0.0])


def thelen_element(name: str, schutte) -> etree._Element:
    e = etree.Element("Thelen2003Muscle", name=name)

    def sub(tag, value):
        etree.SubElement(e, tag).text = value

    sub("appliesForce", "true")
    sub("min_control", "0.01")
    sub("max_control", "1")
    gp = etree.SubElement(e, "GeometryPath", name="path")
    old_wraps = schutte.find("GeometryPath/PathWrapSet")
    if old_wraps is not None:
        gp.append(copy.deepcopy(old_wraps))
    for tag in ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length", "pennation_angle_at_optimal"):
        sub(tag, schutte.find(tag).text.strip())
    sub("max_contraction_velocity", "10")
    # every Thelen property written out, at OpenSim's built-in defaults: OpenSim registers a file's
    # <defaults> for the whole process, so a property left unset would depend on what was loaded before
    from osim_emb.muscles.hill import Thelen2003Muscle
    d = Thelen2003Muscle.__dataclass_fields__
    for tag in ("FmaxTendonStrain", "FmaxMuscleStrain", "KshapeActive", "KshapePassive", "Af", "Flen",
                "fv_linear_extrap_threshold", "maximum_pennation_angle", "activation_time_constant",
                "deactivation_time_constant", "minimum_activation", "default_activation"):
        sub(tag, repr(float(d[tag].default)))
    sub("default_fiber_length", schutte.find("optimal_fiber_length").text.strip())
    sub("ignore_tendon_compliance", "false")
    sub("ignore_activation_dynamics", "false")
    return e


def build(mobl: Path) -> Path:
    doc = read_osim(mobl)
    doc.name = "shoulder3d"
    doc.credits = ("osim-emb 3D shoulder model (seed section 4-4 C). Skeleton, joints and muscle paths: Holzbaur KRS, "
                   "Murray WM, Delp SL (2005) Ann Biomed Eng 33:829-840, as distributed in MoBL-ARMS (Saul KR et al., "
                   "CMBBE 2015). Rhythm: de Groot JH, Brand R (2001) Clin Biomech 16:735-743. Humerus inertia: de Leva P "
                   "(1996) J Biomech 29:1223-1230. Clavicle and scapula inertia: van der Helm FCT (1994) J Biomech 27:551-569.")
    doc.publications = doc.credits
    keep = set(BODIES) | {doc.ground}
    doc.bodies = [b for b in doc.bodies if b.name in keep]
    doc.joints = [j for j in doc.joints if j.child.body in keep]
    coords = {c.name for j in doc.joints for c in j.coordinates}
    doc.couplers = [c for c in doc.couplers if c.dependent in coords]
    doc.forces = [f for f in doc.forces if f.name in MUSCLES]
    for f in doc.forces:
        f.element = thelen_element(f.name, f.element)
        f.type = "Thelen2003Muscle"
    used_wraps = {w.wrap_object for f in doc.forces for w in f.wraps}
    for b in doc.bodies:
        b.wrap_objects = [w for w in b.wrap_objects if w.name in used_wraps]
    hum = next(b for b in doc.bodies if b.name == "humerus")
    direction = hum.com / np.linalg.norm(hum.com)
    hum.mass, hum.com, hum.inertia = de_leva_humerus(direction)
    doc.markers = [m for m in doc.markers if m.body in keep]
    doc.defaults = {}
    doc.version = 40000
    doc = apply_to_document(doc, builtin_rhythm("degroot2001"))
    out = HERE / "shoulder3d.osim"
    write_osim(doc, out)
    return out


if __name__ == "__main__":
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parents[2] / "shared" / "models" / "mobl_arms_holzbaur.osim"
    print("wrote", build(src))
