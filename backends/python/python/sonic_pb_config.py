"""The model configuration helpers of triton_python_backend_utils (which imports them all):
ModelConfig, which auto_complete_config(auto_complete_model_config) completes, and the functions
that read a config as json.loads(args["model_config"]) gives it, with the behaviour of Triton's
python_backend src/resources/triton_python_backend_utils.py."""

import json


class ModelConfig:
    """The configuration auto_complete_config(auto_complete_model_config) completes: the model's
    config as Triton's JSON; the model adds to it."""

    def __init__(self, model_config):
        self._config = json.loads(model_config) if isinstance(model_config, str) else model_config
        self._config.setdefault("input", [])
        self._config.setdefault("output", [])
        self._config.setdefault("max_batch_size", 0)

    def as_dict(self):
        return self._config

    def _name(self):
        return self._config.get("name", "")

    def set_max_batch_size(self, max_batch_size):
        if self._config["max_batch_size"] > max_batch_size:
            raise ValueError(
                "configuration specified max_batch_size %d, but in auto-complete-config function "
                "for model '%s' specified max_batch_size %d"
                % (self._config["max_batch_size"], self._name(), max_batch_size))
        self._config["max_batch_size"] = max_batch_size

    def set_dynamic_batching(self):
        for other in ("sequence_batching", "ensemble_scheduling"):
            if other in self._config:
                raise ValueError(
                    "Configuration specified scheduling_choice as '%s', but auto-complete-config "
                    "function for model '%s' tries to set scheduling_choice as "
                    "'dynamic_batching'" % (other, self._name()))
        self._config.setdefault("dynamic_batching", {})

    def _add(self, kind, tensor, allowed):
        for key in tensor:
            if key not in allowed:
                raise ValueError("%s '%s' in auto-complete-config function for model '%s' "
                                 "contains property other than %s"
                                 % (kind, tensor.get("name"), self._name(), ", ".join(allowed)))
        for key in ("name", "data_type", "dims"):
            if key not in tensor:
                raise ValueError("%s '%s' in auto-complete-config function for model '%s' is "
                                 "missing '%s' property." % (kind, tensor.get("name", ""),
                                                             self._name(), key))
        for current in self._config[kind]:
            if current.get("name") != tensor["name"]:
                continue
            given_type = current.get("data_type", "TYPE_INVALID")
            if given_type not in ("", "TYPE_INVALID") and given_type != tensor["data_type"]:
                raise ValueError("unable to load model '%s', configuration expects datatype %s "
                                 "for %s '%s', model provides %s"
                                 % (self._name(), given_type, kind, tensor["name"],
                                    tensor["data_type"]))
            if current.get("dims") and list(current["dims"]) != list(tensor["dims"]):
                raise ValueError("model '%s', tensor '%s': the model expects dims %s but the "
                                 "model configuration specifies dims %s"
                                 % (self._name(), tensor["name"], list(tensor["dims"]),
                                    list(current["dims"])))
            current["data_type"] = tensor["data_type"]
            current["dims"] = list(tensor["dims"])
            if "optional" in tensor:
                current["optional"] = tensor["optional"]
            return
        self._config[kind].append(dict(tensor, dims=list(tensor["dims"])))

    def add_input(self, input):  # noqa: A002 (Triton's parameter name)
        self._add("input", input, ("name", "data_type", "dims", "optional"))

    def add_output(self, output):
        self._add("output", output, ("name", "data_type", "dims"))

    def set_model_transaction_policy(self, transaction_policy_dict):
        for key in transaction_policy_dict:
            if key != "decoupled":
                raise ValueError("model transaction property in auto-complete-config function "
                                 "for model '%s' contains property other than 'decoupled'."
                                 % self._name())
        policy = self._config.setdefault("model_transaction_policy", {})
        if "decoupled" in transaction_policy_dict:
            wanted = transaction_policy_dict["decoupled"]
            if "decoupled" in policy and policy["decoupled"] != wanted:
                raise ValueError("trying to change decoupled property in auto-complete-config "
                                 "for model '%s', which is already set to '%s'."
                                 % (self._name(), policy["decoupled"]))
            policy["decoupled"] = wanted


def get_input_tensor_by_name(inference_request, name):
    """The request's input of that name, or None."""
    for tensor in inference_request.inputs():
        if tensor.name() == name:
            return tensor
    return None


def get_output_tensor_by_name(inference_response, name):
    """The response's output of that name, or None."""
    for tensor in inference_response.output_tensors():
        if tensor.name() == name:
            return tensor
    return None


def get_input_config_by_name(model_config, name):
    """The input of that name of a config (a dict, as json.loads(args["model_config"])), or
    None."""
    for tensor in model_config.get("input", []):
        if tensor.get("name") == name:
            return tensor
    return None


def get_output_config_by_name(model_config, name):
    """The output of that name of a config (a dict), or None."""
    for tensor in model_config.get("output", []):
        if tensor.get("name") == name:
            return tensor
    return None


def using_decoupled_model_transaction_policy(model_config):
    """Whether the config (a dict) makes the model decoupled (model_transaction_policy
    { decoupled: true }). As Triton's: the policy's "decoupled" when the config has a policy,
    else False."""
    if "model_transaction_policy" in model_config:
        return model_config["model_transaction_policy"].get("decoupled", False)
    return False
