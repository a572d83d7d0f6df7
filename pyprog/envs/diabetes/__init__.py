"""NS-Diabetes: a bolus calculator for a type-1-diabetes patient whose body drifts.

The package is split by what each part models, in simglucose's own terms:

* :mod:`~pyprog.envs.diabetes.parameters` -- the UVa/Padova patients, the pump and the sensor;
* :mod:`~pyprog.envs.diabetes.patient` -- the patient's ODE and its DOPRI5 integrator (numba);
* :mod:`~pyprog.envs.diabetes.day` -- one day of meals, sensor noise, pump and bolus rule (numba);
* :mod:`~pyprog.envs.diabetes.env` -- the Gymnasium environment :class:`NSDiabetes`.

Nothing is imported here, so that reading a patient's parameters does not load numba.
"""
