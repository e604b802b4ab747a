"""The API schema's shared parts: the refusals every endpoint can answer.

Each view declares what it answers when it succeeds (and any refusal of its own, such as a
409); :class:`RedlineAutoSchema` adds the refusals common to all of them, so that every status
code the API can answer is in /api/schema/.
"""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema

from annotation.api.workflow_bodies import Error

COMMON_REFUSALS = {
    "400": "Refused: the body or a query parameter is wrong; `detail` names the field.",
    "401": "Not signed in (with HTTP Basic credentials that are wrong).",
    "403": "Not signed in, or not allowed to do this.",
    "404": "No such study, annotation or job among yours.",
}
BODY_REFUSALS = {"415": "The body is not JSON, a form or multipart data."}
# Every write to a study asks its state (annotation.services.study_state).
STATE_REFUSALS = {"409": "Refused by the study's state (closed or archived; being set up, for work; "
                         "running, for a frozen setting): `detail` names the state."}


class RedlineAutoSchema(AutoSchema):
    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        refusals = dict(COMMON_REFUSALS)
        if self.method in ("POST", "PUT", "PATCH"):
            refusals.update(BODY_REFUSALS)
        if self.method in ("POST", "PUT", "PATCH", "DELETE"):
            refusals.update(STATE_REFUSALS)
        for code, description in refusals.items():
            if code not in responses:
                responses[code] = self._get_response_for_code(Error, code, direction=direction)
                responses[code]["description"] = description
        return responses


class PerActionSchema(RedlineAutoSchema):
    """The schema of a view class that serves several URLs told apart by its `action`
    (``ReviewAction.as_view(action="claim")``): the view's ``schema_by_action[action]`` is
    ``(request serializer or None, responses)``."""

    def _declared(self):
        return self.view.schema_by_action[self.view.action]

    def get_request_serializer(self):
        return self._declared()[0]

    def get_response_serializers(self):
        return self._declared()[1]

    def get_operation_id(self):
        return f"annotations_{self.view.action}"
